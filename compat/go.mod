// The compatibility tests: a module of their own, so that the product's go.mod does not take on
// the real BBS client and its dependencies (lager, cfhttp, rata, go-sse, gogo/protobuf).
//
// code.cloudfoundry.org modules refuse version listing on the module proxy but resolve at
// exact versions, so each is required at one. Tidy with `go mod tidy -e`: the bbs module's
// go.mod has no go line, so its own tests' imports count, and they reach
// code.cloudfoundry.org/locket, which nothing built here needs.
module github.com/updatable-lrps/bbs/compat

go 1.26.0

require (
	code.cloudfoundry.org/bbs v0.0.0-20260507155651-045cbe358842
	code.cloudfoundry.org/lager/v3 v3.0.3
	code.cloudfoundry.org/tlsconfig v0.0.0-20240216143505-4f8d9b753d56
	github.com/gogo/protobuf v1.3.2
)

require (
	code.cloudfoundry.org/cfhttp/v2 v2.0.0 // indirect
	code.cloudfoundry.org/clock v1.60.0 // indirect
	github.com/Masterminds/semver/v3 v3.4.0 // indirect
	github.com/bmizerany/pat v0.0.0-20170815010413-6226ea591a40 // indirect
	github.com/go-sql-driver/mysql v1.10.1 // indirect
	github.com/go-task/slim-sprig/v3 v3.0.0 // indirect
	github.com/go-test/deep v1.1.2 // indirect
	github.com/google/pprof v0.0.0-20260202012954-cb029daf43ef // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/onsi/ginkgo v1.16.5 // indirect
	github.com/onsi/ginkgo/v2 v2.28.1 // indirect
	github.com/onsi/gomega v1.39.1 // indirect
	github.com/openzipkin/zipkin-go v0.4.2 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/tedsuo/ifrit v0.0.0-20230516164442-7862c310ad26 // indirect
	github.com/tedsuo/rata v1.0.0 // indirect
	github.com/vito/go-sse v1.0.0 // indirect
	golang.org/x/crypto v0.47.0 // indirect
	golang.org/x/mod v0.32.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/tools v0.41.0 // indirect
)

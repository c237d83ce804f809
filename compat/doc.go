// Package compat proves our BBS-protocol listener against an independent implementation:
// its tests build cmd/bbs, start `bbs dev` (and `bbs api` with mutual TLS), and drive the
// listener with the real Diego BBS Go client (code.cloudfoundry.org/bbs), as Cloud Foundry's
// own components would. It is a module of its own so that the product's go.mod does not take
// on that client and its dependencies; it talks to the binary over the wire and imports none
// of our packages.
//
// The tests need the temporal CLI ($TEMPORAL_BIN, ../bin/temporal, or temporal on PATH) and
// the PostgreSQL binaries `bbs dev` starts its database with; they fail, never skip, when
// one is missing. Only the cases of routes the listener does not serve yet skip, naming the
// route (served, in routes_test.go, lists the served ones). Run them with `make compat` from
// the repository root.
package compat

package model_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// check asserts that err is nil when valid, and otherwise an InvalidRequest model error.
func check(t *testing.T, err error, valid bool) {
	t.Helper()
	if valid {
		if err != nil {
			t.Fatalf("want valid, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want %s, got nil", model.ErrInvalidRequest)
	}
	if got := model.TypeOf(err); got != model.ErrInvalidRequest {
		t.Fatalf("want %s, got %s (%v)", model.ErrInvalidRequest, got, err)
	}
	if _, ok := err.(*model.Error); !ok {
		t.Fatalf("want a *model.Error, got %T", err)
	}
}

func runAction(path string) *model.Action {
	return &model.Action{Run: &model.RunAction{Path: path}}
}

func validDefinition() model.LRPDefinition {
	return model.LRPDefinition{
		DefinitionID: "v1",
		RootFS:       "docker:///busybox",
		Action:       runAction("/bin/sh"),
		MemoryMB:     128,
		DiskMB:       256,
	}
}

func validDesired() model.DesiredLRP {
	return model.DesiredLRP{
		ProcessGUID:   "web-1",
		Domain:        "cf-apps",
		Instances:     2,
		LRPDefinition: validDefinition(),
	}
}

// action decodes an action from its JSON shape, failing the test on malformed JSON.
func action(t *testing.T, s string) *model.Action {
	t.Helper()
	var a *model.Action
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		t.Fatalf("decode action %s: %v", s, err)
	}
	return a
}

// nest wraps a run action in n layers of the given wrapper kind, so that the run action sits
// n levels below the top.
func nest(kind string, n int) string {
	s := `{"run":{"path":"/bin/true"}}`
	for i := 0; i < n; i++ {
		switch kind {
		case "try":
			s = `{"try":{"action":` + s + `}}`
		case "timeout":
			s = `{"timeout":{"timeout_ms":1000,"action":` + s + `}}`
		case "emit_progress":
			s = `{"emit_progress":{"action":` + s + `}}`
		case "serial", "parallel", "codependent":
			s = `{"` + kind + `":{"actions":[` + s + `]}}`
		case "mixed":
			s = strings.Replace(mixedLayer(i), "X", s, 1)
		}
	}
	return s
}

func mixedLayer(i int) string {
	return []string{
		`{"try":{"action":X}}`,
		`{"serial":{"actions":[{"run":{"path":"a"}},X]}}`,
		`{"timeout":{"timeout_ms":5,"action":X}}`,
		`{"parallel":{"actions":[X]}}`,
		`{"emit_progress":{"action":X}}`,
		`{"codependent":{"actions":[X,{"run":{"path":"b"}}]}}`,
	}[i%6]
}

func TestValidateGUID(t *testing.T) {
	for _, c := range []struct {
		name  string
		guid  string
		valid bool
	}{
		{"empty", "", false},
		{"one char", "a", true},
		{"255 chars", strings.Repeat("a", 255), true},
		{"256 chars", strings.Repeat("a", 256), false},
		{"all allowed classes", "Az09_-", true},
		{"only dash", "-", true},
		{"only underscore", "_", true},
		{"uuid", "5b5fb0a8-79d2-4d0f-9b1b-1e0c5b9c6a3e", true},
		{"space", "web 1", false},
		{"leading space", " web", false},
		{"trailing newline", "web\n", false},
		{"slash", "web/1", false},
		{"dot", "web.1", false},
		{"colon", "web:1", false},
		{"percent", "web%201", false},
		{"NUL", "web\x001", false},
		{"unicode letter", "wéb", false},
		{"unicode digit", "web٣", false},
		{"emoji", "web🚀", false},
		{"invalid utf-8", "web\xff", false},
		{"255 bytes of 2-byte runes", strings.Repeat("é", 127) + "a", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, model.ValidateGUID("process_guid", c.guid), c.valid)
		})
	}
}

func TestDesiredLRPValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(d *model.DesiredLRP)
		valid  bool
	}{
		{"valid", func(d *model.DesiredLRP) {}, true},

		// process_guid
		{"process_guid empty", func(d *model.DesiredLRP) { d.ProcessGUID = "" }, false},
		{"process_guid 1 char", func(d *model.DesiredLRP) { d.ProcessGUID = "a" }, true},
		{"process_guid 255 chars", func(d *model.DesiredLRP) { d.ProcessGUID = strings.Repeat("p", 255) }, true},
		{"process_guid 256 chars", func(d *model.DesiredLRP) { d.ProcessGUID = strings.Repeat("p", 256) }, false},
		{"process_guid space", func(d *model.DesiredLRP) { d.ProcessGUID = "web 1" }, false},
		{"process_guid slash", func(d *model.DesiredLRP) { d.ProcessGUID = "web/1" }, false},
		{"process_guid dot", func(d *model.DesiredLRP) { d.ProcessGUID = "web.1" }, false},
		{"process_guid unicode", func(d *model.DesiredLRP) { d.ProcessGUID = "wéb" }, false},

		// definition_id: optional in a DesiredLRP (promoted to the process guid), checked when given
		{"definition_id empty", func(d *model.DesiredLRP) { d.DefinitionID = "" }, true},
		{"definition_id 1 char", func(d *model.DesiredLRP) { d.DefinitionID = "a" }, true},
		{"definition_id 255 chars", func(d *model.DesiredLRP) { d.DefinitionID = strings.Repeat("d", 255) }, true},
		{"definition_id 256 chars", func(d *model.DesiredLRP) { d.DefinitionID = strings.Repeat("d", 256) }, false},
		{"definition_id space", func(d *model.DesiredLRP) { d.DefinitionID = "v 1" }, false},
		{"definition_id slash", func(d *model.DesiredLRP) { d.DefinitionID = "v/1" }, false},
		{"definition_id dot", func(d *model.DesiredLRP) { d.DefinitionID = "v.1" }, false},
		{"definition_id unicode", func(d *model.DesiredLRP) { d.DefinitionID = "vü" }, false},

		// domain
		{"domain empty", func(d *model.DesiredLRP) { d.Domain = "" }, false},
		{"domain one char", func(d *model.DesiredLRP) { d.Domain = "x" }, true},

		// instances
		{"instances -1", func(d *model.DesiredLRP) { d.Instances = -1 }, false},
		{"instances 0", func(d *model.DesiredLRP) { d.Instances = 0 }, true},
		{"instances 10000", func(d *model.DesiredLRP) { d.Instances = 10000 }, true},
		{"instances 10001", func(d *model.DesiredLRP) { d.Instances = 10001 }, false},
		{"instances min int32", func(d *model.DesiredLRP) { d.Instances = -1 << 31 }, false},

		// annotation: bytes, not runes
		{"annotation empty", func(d *model.DesiredLRP) { d.Annotation = "" }, true},
		{"annotation 10 KiB", func(d *model.DesiredLRP) { d.Annotation = strings.Repeat("a", 10*1024) }, true},
		{"annotation 10 KiB + 1", func(d *model.DesiredLRP) { d.Annotation = strings.Repeat("a", 10*1024+1) }, false},
		{"annotation 10 KiB of 2-byte runes", func(d *model.DesiredLRP) { d.Annotation = strings.Repeat("é", 5*1024) }, true},
		{"annotation over 10 KiB in bytes, under in runes", func(d *model.DesiredLRP) { d.Annotation = strings.Repeat("é", 5*1024+1) }, false},

		// routes
		{"routes nil", func(d *model.DesiredLRP) { d.Routes = nil }, true},
		{"routes empty", func(d *model.DesiredLRP) { d.Routes = model.Routes{} }, true},
		{"routes typical", func(d *model.DesiredLRP) {
			d.Routes = model.Routes{"cf-router": json.RawMessage(`[{"hostnames":["a.example.com"],"port":8080}]`)}
		}, true},
		{"routes exactly 128 KiB", func(d *model.DesiredLRP) { d.Routes = routesOfSize(128*1024, 1) }, true},
		{"routes 128 KiB + 1", func(d *model.DesiredLRP) { d.Routes = routesOfSize(128*1024+1, 1) }, false},
		{"routes exactly 128 KiB over 4 routers", func(d *model.DesiredLRP) { d.Routes = routesOfSize(128*1024, 4) }, true},
		{"routes 128 KiB + 1 over 4 routers", func(d *model.DesiredLRP) { d.Routes = routesOfSize(128*1024+1, 4) }, false},
		{"routes value not JSON", func(d *model.DesiredLRP) { d.Routes = model.Routes{"cf-router": json.RawMessage(`{`)} }, false},
		{"routes value empty", func(d *model.DesiredLRP) { d.Routes = model.Routes{"cf-router": nil} }, false},
		{"routes value null", func(d *model.DesiredLRP) { d.Routes = model.Routes{"cf-router": json.RawMessage(`null`)} }, true},
		{"routes empty router name", func(d *model.DesiredLRP) { d.Routes = model.Routes{"": json.RawMessage(`{}`)} }, false},

		// the definition, through the DesiredLRP
		{"rootfs missing", func(d *model.DesiredLRP) { d.RootFS = "" }, false},
		{"action missing", func(d *model.DesiredLRP) { d.Action = nil }, false},
		{"memory_mb -1", func(d *model.DesiredLRP) { d.MemoryMB = -1 }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := validDesired()
			c.mutate(&d)
			check(t, d.Validate(), c.valid)
		})
	}
}

// routesOfSize builds n routers whose names and compact JSON values add up to exactly total
// bytes.
func routesOfSize(total, n int) model.Routes {
	r := model.Routes{}
	per := total / n
	for i := 0; i < n; i++ {
		size := per
		if i == n-1 {
			size = total - per*(n-1)
		}
		name := "router-" + string(rune('a'+i)) // 8 bytes
		value := `"` + strings.Repeat("x", size-len(name)-2) + `"`
		r[name] = json.RawMessage(value)
	}
	return r
}

// TestRoutesSizeSurvivesReencoding checks that routes the API accepts are still accepted
// after a JSON round trip: encoding/json escapes <, > and & in a json.RawMessage as \u003c
// and so on, so the size limit must be measured on that form.
func TestRoutesSizeSurvivesReencoding(t *testing.T) {
	for _, c := range []struct {
		name  string
		value string
	}{
		{"html characters", `"` + strings.Repeat("<>&", (128*1024-20)/3) + `"`},
		{"whitespace", `[` + strings.Repeat(" 1 ,", 30*1024) + ` 1 ]`},
		{"line separators", `"` + strings.Repeat("\u2028", 40*1024) + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := validDesired()
			d.Routes = model.Routes{"cf-router": json.RawMessage(c.value)}
			first := d.Validate()
			b, err := json.Marshal(&d)
			if err != nil {
				t.Fatal(err)
			}
			var again model.DesiredLRP
			if err := json.Unmarshal(b, &again); err != nil {
				t.Fatal(err)
			}
			second := again.Validate()
			if (first == nil) != (second == nil) {
				t.Fatalf("validation changed across a JSON round trip: before %v, after %v", first, second)
			}
		})
	}
}

func TestLRPDefinitionValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(d *model.LRPDefinition)
		valid  bool
	}{
		{"valid", func(d *model.LRPDefinition) {}, true},
		{"definition_id empty (checked by the caller)", func(d *model.LRPDefinition) { d.DefinitionID = "" }, true},
		{"definition_id bad", func(d *model.LRPDefinition) { d.DefinitionID = "v.1" }, false},

		// rootfs
		{"rootfs missing", func(d *model.LRPDefinition) { d.RootFS = "" }, false},
		{"rootfs without scheme", func(d *model.LRPDefinition) { d.RootFS = "busybox" }, false},
		{"rootfs absolute path", func(d *model.LRPDefinition) { d.RootFS = "/var/vcap/rootfs" }, false},
		{"rootfs unparseable", func(d *model.LRPDefinition) { d.RootFS = "://busybox" }, false},
		{"rootfs bad escape", func(d *model.LRPDefinition) { d.RootFS = "docker:///%zz" }, false},
		{"rootfs docker", func(d *model.LRPDefinition) { d.RootFS = "docker:///busybox" }, true},
		{"rootfs docker with registry and tag", func(d *model.LRPDefinition) { d.RootFS = "docker://registry.example.com/org/app:1.2" }, true},
		{"rootfs preloaded", func(d *model.LRPDefinition) { d.RootFS = "preloaded:cflinuxfs4" }, true},

		// resources
		{"memory_mb -1", func(d *model.LRPDefinition) { d.MemoryMB = -1 }, false},
		{"memory_mb 0", func(d *model.LRPDefinition) { d.MemoryMB = 0 }, true},
		{"disk_mb -1", func(d *model.LRPDefinition) { d.DiskMB = -1 }, false},
		{"disk_mb 0", func(d *model.LRPDefinition) { d.DiskMB = 0 }, true},
		{"cpu_weight 0", func(d *model.LRPDefinition) { d.CPUWeight = 0 }, true},
		{"cpu_weight 100", func(d *model.LRPDefinition) { d.CPUWeight = 100 }, true},
		{"cpu_weight 101", func(d *model.LRPDefinition) { d.CPUWeight = 101 }, false},
		{"start_timeout_ms -1", func(d *model.LRPDefinition) { d.StartTimeoutMs = -1 }, false},
		{"start_timeout_ms 0", func(d *model.LRPDefinition) { d.StartTimeoutMs = 0 }, true},

		// actions
		{"action missing", func(d *model.LRPDefinition) { d.Action = nil }, false},
		{"action empty", func(d *model.LRPDefinition) { d.Action = &model.Action{} }, false},
		{"action invalid", func(d *model.LRPDefinition) { d.Action = runAction("") }, false},
		{"setup valid", func(d *model.LRPDefinition) { d.Setup = runAction("/setup") }, true},
		{"setup invalid", func(d *model.LRPDefinition) { d.Setup = &model.Action{} }, false},
		{"monitor valid", func(d *model.LRPDefinition) { d.Monitor = runAction("/healthcheck") }, true},
		{"monitor invalid", func(d *model.LRPDefinition) { d.Monitor = runAction("") }, false},

		// env
		{"env valid", func(d *model.LRPDefinition) { d.Env = []model.EnvironmentVariable{{Name: "PORT", Value: "8080"}} }, true},
		{"env empty value", func(d *model.LRPDefinition) { d.Env = []model.EnvironmentVariable{{Name: "EMPTY"}} }, true},
		{"env empty name", func(d *model.LRPDefinition) { d.Env = []model.EnvironmentVariable{{Value: "x"}} }, false},
		{"env second name empty", func(d *model.LRPDefinition) {
			d.Env = []model.EnvironmentVariable{{Name: "A", Value: "1"}, {Name: "", Value: "2"}}
		}, false},

		// ports
		{"ports 1 and 65535", func(d *model.LRPDefinition) { d.Ports = []uint32{1, 8080, 65535} }, true},
		{"ports 0", func(d *model.LRPDefinition) { d.Ports = []uint32{8080, 0} }, false},
		{"ports 65536", func(d *model.LRPDefinition) { d.Ports = []uint32{65536} }, false},
		{"ports max uint32", func(d *model.LRPDefinition) { d.Ports = []uint32{1<<32 - 1} }, false},

		// placement tags
		{"placement_tags valid", func(d *model.LRPDefinition) { d.PlacementTags = []string{"gpu"} }, true},
		{"placement_tags empty tag", func(d *model.LRPDefinition) { d.PlacementTags = []string{"gpu", ""} }, false},

		// check_definition
		{"check_definition no checks", func(d *model.LRPDefinition) { d.CheckDefinition = &model.CheckDefinition{} }, true},
		{"check_definition tcp", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 8080}})
		}, true},
		{"check_definition http", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}})
		}, true},
		{"check_definition neither", func(d *model.LRPDefinition) { d.CheckDefinition = checks(model.Check{}) }, false},
		{"check_definition both", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 8080}, HTTPCheck: &model.HTTPCheck{Port: 8080}})
		}, false},
		{"check_definition second invalid", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 8080}}, model.Check{})
		}, false},
		{"tcp_check port 0", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 0}})
		}, false},
		{"tcp_check port 1", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 1}})
		}, true},
		{"tcp_check port 65535", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 65535}})
		}, true},
		{"tcp_check port 65536", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{TCPCheck: &model.TCPCheck{Port: 65536}})
		}, false},
		{"http_check port 0", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{HTTPCheck: &model.HTTPCheck{Port: 0}})
		}, false},
		{"http_check port 65535", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{HTTPCheck: &model.HTTPCheck{Port: 65535}})
		}, true},
		{"http_check port 65536", func(d *model.LRPDefinition) {
			d.CheckDefinition = checks(model.Check{HTTPCheck: &model.HTTPCheck{Port: 65536}})
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := validDefinition()
			c.mutate(&d)
			check(t, d.Validate(), c.valid)
		})
	}
}

func checks(cs ...model.Check) *model.CheckDefinition { return &model.CheckDefinition{Checks: cs} }

func TestLRPDefinitionOpaqueFields(t *testing.T) {
	set := map[string]func(d *model.LRPDefinition, v json.RawMessage){
		"egress_rules":        func(d *model.LRPDefinition, v json.RawMessage) { d.EgressRules = v },
		"cached_dependencies": func(d *model.LRPDefinition, v json.RawMessage) { d.CachedDependencies = v },
		"volume_mounts":       func(d *model.LRPDefinition, v json.RawMessage) { d.VolumeMounts = v },
		"network":             func(d *model.LRPDefinition, v json.RawMessage) { d.Network = v },
	}
	for field, setter := range set {
		wantArray := field != "network"
		for _, c := range []struct {
			name  string
			value string
			valid bool
		}{
			{"absent", "", true},
			{"null", "null", true},
			{"empty array", "[]", wantArray},
			{"array", `[{"protocol":"tcp","destinations":["0.0.0.0/0"]}]`, wantArray},
			{"array after whitespace", " \n\t[]", wantArray},
			{"empty object", "{}", !wantArray},
			{"object", `{"properties":{"policy_group_id":"x"}}`, !wantArray},
			{"object after whitespace", "\r\n {}", !wantArray},
			{"string", `"[]"`, false},
			{"number", "1", false},
			{"true", "true", false},
		} {
			t.Run(field+"/"+c.name, func(t *testing.T) {
				d := validDefinition()
				if c.value != "" {
					setter(&d, json.RawMessage(c.value))
				}
				check(t, d.Validate(), c.valid)
			})
		}
	}
}

func TestActionValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		action string
		valid  bool
	}{
		// exactly one kind
		{"run", `{"run":{"path":"/bin/true","args":["-c","x"],"dir":"/app","env":[{"name":"A","value":"1"}]}}`, true},
		{"empty object", `{}`, false},
		{"null", `null`, false},
		{"only null kinds", `{"run":null,"serial":null}`, false},
		{"two kinds", `{"run":{"path":"/bin/true"},"try":{"action":{"run":{"path":"/bin/true"}}}}`, false},
		{"two kinds, one null", `{"run":{"path":"/bin/true"},"try":null}`, true},
		{"unknown kind only", `{"exec":{"path":"/bin/true"}}`, false},

		// run
		{"run without path", `{"run":{}}`, false},
		{"run with empty path", `{"run":{"path":""}}`, false},
		{"run env name empty", `{"run":{"path":"/bin/true","env":[{"name":"","value":"x"}]}}`, false},

		// download / upload
		{"download", `{"download":{"from":"http://x/a.tgz","to":"/app"}}`, true},
		{"download without to", `{"download":{"from":"http://x/a.tgz"}}`, false},
		{"download without from", `{"download":{"to":"/app"}}`, false},
		{"download with checksum", `{"download":{"from":"f","to":"t","checksum_algorithm":"sha256","checksum_value":"ab"}}`, true},
		{"download with algorithm only", `{"download":{"from":"f","to":"t","checksum_algorithm":"sha256"}}`, false},
		{"download with value only", `{"download":{"from":"f","to":"t","checksum_value":"ab"}}`, false},
		{"upload", `{"upload":{"from":"/tmp/x","to":"http://x/up"}}`, true},
		{"upload without from", `{"upload":{"to":"http://x/up"}}`, false},
		{"upload without to", `{"upload":{"from":"/tmp/x"}}`, false},

		// timeout
		{"timeout", `{"timeout":{"timeout_ms":1000,"action":{"run":{"path":"/bin/true"}}}}`, true},
		{"timeout with timeout_ms 0", `{"timeout":{"timeout_ms":0,"action":{"run":{"path":"/bin/true"}}}}`, false},
		{"timeout without timeout_ms", `{"timeout":{"action":{"run":{"path":"/bin/true"}}}}`, false},
		{"timeout with negative timeout_ms", `{"timeout":{"timeout_ms":-1,"action":{"run":{"path":"/bin/true"}}}}`, false},
		{"timeout without action", `{"timeout":{"timeout_ms":1000}}`, false},
		{"timeout with invalid action", `{"timeout":{"timeout_ms":1000,"action":{}}}`, false},

		// try / emit_progress
		{"try", `{"try":{"action":{"run":{"path":"/bin/true"}}}}`, true},
		{"try without action", `{"try":{}}`, false},
		{"try with invalid action", `{"try":{"action":{"run":{}}}}`, false},
		{"emit_progress", `{"emit_progress":{"start_message":"go","action":{"run":{"path":"/bin/true"}}}}`, true},
		{"emit_progress without action", `{"emit_progress":{"start_message":"go"}}`, false},

		// serial / parallel / codependent
		{"serial", `{"serial":{"actions":[{"run":{"path":"a"}},{"run":{"path":"b"}}]}}`, true},
		{"serial with empty actions", `{"serial":{"actions":[]}}`, false},
		{"serial without actions", `{"serial":{}}`, false},
		{"serial with a null action", `{"serial":{"actions":[{"run":{"path":"a"}},null]}}`, false},
		{"serial with an invalid second action", `{"serial":{"actions":[{"run":{"path":"a"}},{}]}}`, false},
		{"parallel", `{"parallel":{"actions":[{"run":{"path":"a"}}]}}`, true},
		{"parallel with empty actions", `{"parallel":{"actions":[]}}`, false},
		{"parallel with a two-kind action", `{"parallel":{"actions":[{"run":{"path":"a"},"upload":{"from":"f","to":"t"}}]}}`, false},
		{"codependent", `{"codependent":{"actions":[{"run":{"path":"a"}},{"run":{"path":"b"}}]}}`, true},
		{"codependent with empty actions", `{"codependent":{"actions":[]}}`, false},
		{"codependent with null actions", `{"codependent":{"actions":null}}`, false},

		// nested
		{"nested valid", `{"serial":{"actions":[{"download":{"from":"f","to":"t"}},{"codependent":{"actions":[
			{"timeout":{"timeout_ms":5,"action":{"try":{"action":{"run":{"path":"a"}}}}}},
			{"parallel":{"actions":[{"emit_progress":{"action":{"run":{"path":"b"}}}}]}}]}}]}}`, true},
		{"nested invalid deep inside", `{"serial":{"actions":[{"download":{"from":"f","to":"t"}},{"codependent":{"actions":[
			{"timeout":{"timeout_ms":5,"action":{"try":{"action":{"run":{"path":"a"}}}}}},
			{"parallel":{"actions":[{"emit_progress":{"action":{"run":{"path":""}}}}]}}]}}]}}`, false},
		{"nested empty serial deep inside", `{"try":{"action":{"parallel":{"actions":[{"timeout":{"timeout_ms":5,"action":{"serial":{"actions":[]}}}}]}}}}`, false},
		{"nested timeout 0 deep inside", `{"serial":{"actions":[{"try":{"action":{"timeout":{"timeout_ms":0,"action":{"run":{"path":"a"}}}}}}]}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, action(t, c.action).Validate(), c.valid)
		})
	}
}

func TestActionNestingLimit(t *testing.T) {
	// The top-level action is at depth 0; its run action may sit at most 32 levels below it.
	for _, kind := range []string{"try", "timeout", "emit_progress", "serial", "parallel", "codependent", "mixed"} {
		for _, c := range []struct {
			depth int
			valid bool
		}{{0, true}, {1, true}, {31, true}, {32, true}, {33, false}, {34, false}, {500, false}} {
			t.Run(kind+"/"+strconv.Itoa(c.depth), func(t *testing.T) {
				a := action(t, nest(kind, c.depth))
				check(t, a.Validate(), c.valid)
				// The limit holds wherever the action sits in a definition.
				for _, where := range []string{"setup", "action", "monitor"} {
					d := validDefinition()
					switch where {
					case "setup":
						d.Setup = a
					case "action":
						d.Action = a
					case "monitor":
						d.Monitor = a
					}
					check(t, d.Validate(), c.valid)
				}
			})
		}
	}
}

func TestDesiredLRPUpdateValidate(t *testing.T) {
	i32 := func(i int32) *int32 { return &i }
	str := func(s string) *string { return &s }
	def := func(mutate func(d *model.LRPDefinition)) *model.LRPDefinition {
		d := validDefinition()
		d.DefinitionID = "v2"
		mutate(&d)
		return &d
	}
	bigRoutes := routesOfSize(128*1024+1, 2)
	okRoutes := routesOfSize(128*1024, 2)
	for _, c := range []struct {
		name   string
		update model.DesiredLRPUpdate
		valid  bool
	}{
		{"empty", model.DesiredLRPUpdate{}, true},
		{"instances -1", model.DesiredLRPUpdate{Instances: i32(-1)}, false},
		{"instances 0", model.DesiredLRPUpdate{Instances: i32(0)}, true},
		{"instances 10000", model.DesiredLRPUpdate{Instances: i32(10000)}, true},
		{"instances 10001", model.DesiredLRPUpdate{Instances: i32(10001)}, false},
		{"annotation empty", model.DesiredLRPUpdate{Annotation: str("")}, true},
		{"annotation 10 KiB", model.DesiredLRPUpdate{Annotation: str(strings.Repeat("a", 10*1024))}, true},
		{"annotation 10 KiB + 1", model.DesiredLRPUpdate{Annotation: str(strings.Repeat("a", 10*1024+1))}, false},
		{"routes empty", model.DesiredLRPUpdate{Routes: &model.Routes{}}, true},
		{"routes at the limit", model.DesiredLRPUpdate{Routes: &okRoutes}, true},
		{"routes over the limit", model.DesiredLRPUpdate{Routes: &bigRoutes}, false},
		{"routes not JSON", model.DesiredLRPUpdate{Routes: &model.Routes{"r": json.RawMessage("nope")}}, false},
		{"definition valid", model.DesiredLRPUpdate{Definition: def(func(d *model.LRPDefinition) {})}, true},
		{"definition without id", model.DesiredLRPUpdate{Definition: def(func(d *model.LRPDefinition) { d.DefinitionID = "" })}, false},
		{"definition with bad id", model.DesiredLRPUpdate{Definition: def(func(d *model.LRPDefinition) { d.DefinitionID = "v 2" })}, false},
		{"definition with 256-char id", model.DesiredLRPUpdate{Definition: def(func(d *model.LRPDefinition) { d.DefinitionID = strings.Repeat("v", 256) })}, false},
		{"definition without action", model.DesiredLRPUpdate{Definition: def(func(d *model.LRPDefinition) { d.Action = nil })}, false},
		{"definition with bad rootfs", model.DesiredLRPUpdate{Definition: def(func(d *model.LRPDefinition) { d.RootFS = "busybox" })}, false},
		{"everything valid", model.DesiredLRPUpdate{Instances: i32(3), Annotation: str("x"), Routes: &model.Routes{"r": json.RawMessage(`{}`)},
			Definition: def(func(d *model.LRPDefinition) {})}, true},
		{"valid fields, bad instances", model.DesiredLRPUpdate{Instances: i32(-5), Annotation: str("x"),
			Definition: def(func(d *model.LRPDefinition) {})}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, c.update.Validate(), c.valid)
		})
	}
}

func TestLRPDeploymentCreateDesiredLRP(t *testing.T) {
	valid := func() model.LRPDeploymentCreate {
		def := validDefinition()
		def.DefinitionID = ""
		return model.LRPDeploymentCreate{
			ProcessGUID:  "web-1",
			Domain:       "cf-apps",
			Instances:    3,
			Routes:       model.Routes{"cf-router": json.RawMessage(`[]`)},
			Annotation:   "note",
			DefinitionID: "v1",
			Definition:   &def,
		}
	}
	for _, c := range []struct {
		name   string
		mutate func(c *model.LRPDeploymentCreate)
		valid  bool
	}{
		{"valid", func(c *model.LRPDeploymentCreate) {}, true},
		{"matching ids", func(c *model.LRPDeploymentCreate) { c.Definition.DefinitionID = "v1" }, true},
		{"mismatched ids", func(c *model.LRPDeploymentCreate) { c.Definition.DefinitionID = "v2" }, false},
		{"definition without id", func(c *model.LRPDeploymentCreate) { c.DefinitionID = "" }, false},
		{"definition id only inside", func(c *model.LRPDeploymentCreate) { c.DefinitionID = ""; c.Definition.DefinitionID = "v1" }, false},
		{"bad definition_id", func(c *model.LRPDeploymentCreate) { c.DefinitionID = "v/1" }, false},
		{"256-char definition_id", func(c *model.LRPDeploymentCreate) { c.DefinitionID = strings.Repeat("v", 256) }, false},
		{"id without definition", func(c *model.LRPDeploymentCreate) { c.Definition = nil }, false},
		{"bad process_guid", func(c *model.LRPDeploymentCreate) { c.ProcessGUID = "web 1" }, false},
		{"missing process_guid", func(c *model.LRPDeploymentCreate) { c.ProcessGUID = "" }, false},
		{"missing domain", func(c *model.LRPDeploymentCreate) { c.Domain = "" }, false},
		{"instances 10001", func(c *model.LRPDeploymentCreate) { c.Instances = 10001 }, false},
		{"annotation too long", func(c *model.LRPDeploymentCreate) { c.Annotation = strings.Repeat("a", 10*1024+1) }, false},
		{"routes too large", func(c *model.LRPDeploymentCreate) { c.Routes = routesOfSize(128*1024+1, 1) }, false},
		{"definition without action", func(c *model.LRPDeploymentCreate) { c.Definition.Action = nil }, false},
		{"definition with bad rootfs", func(c *model.LRPDeploymentCreate) { c.Definition.RootFS = "busybox" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := valid()
			c.mutate(&req)
			var innerBefore string
			if req.Definition != nil {
				innerBefore = req.Definition.DefinitionID
			}
			d, err := req.DesiredLRP()
			check(t, err, c.valid)
			if req.Definition != nil && req.Definition.DefinitionID != innerBefore {
				t.Errorf("DesiredLRP changed the request's definition id from %q to %q", innerBefore, req.Definition.DefinitionID)
			}
			if !c.valid {
				return
			}
			if d == nil {
				t.Fatal("valid request gave a nil DesiredLRP")
			}
			if d.DefinitionID != req.DefinitionID || d.ProcessGUID != req.ProcessGUID || d.Domain != req.Domain ||
				d.Instances != req.Instances || d.Annotation != req.Annotation || len(d.Routes) != len(req.Routes) ||
				d.RootFS != req.Definition.RootFS || d.Action != req.Definition.Action {
				t.Errorf("DesiredLRP does not carry the request: %+v", d)
			}
		})
	}
}

func TestLRPDeploymentUpdateDesiredLRPUpdate(t *testing.T) {
	i32 := func(i int32) *int32 { return &i }
	str := func(s string) *string { return &s }
	def := func(id string) *model.LRPDefinition {
		d := validDefinition()
		d.DefinitionID = id
		return &d
	}
	for _, c := range []struct {
		name   string
		update model.LRPDeploymentUpdate
		valid  bool
		wantID string
	}{
		{"empty", model.LRPDeploymentUpdate{}, true, ""},
		{"instances only", model.LRPDeploymentUpdate{Instances: i32(4)}, true, ""},
		{"bad instances", model.LRPDeploymentUpdate{Instances: i32(-1)}, false, ""},
		{"instances 10001", model.LRPDeploymentUpdate{Instances: i32(10001)}, false, ""},
		{"annotation too long", model.LRPDeploymentUpdate{Annotation: str(strings.Repeat("a", 10*1024+1))}, false, ""},
		{"id and definition", model.LRPDeploymentUpdate{DefinitionID: str("v2"), Definition: def("")}, true, "v2"},
		{"matching ids", model.LRPDeploymentUpdate{DefinitionID: str("v2"), Definition: def("v2")}, true, "v2"},
		{"mismatched ids", model.LRPDeploymentUpdate{DefinitionID: str("v2"), Definition: def("v3")}, false, ""},
		{"definition without id", model.LRPDeploymentUpdate{Definition: def("")}, false, ""},
		{"definition with only an inner id", model.LRPDeploymentUpdate{Definition: def("v2")}, false, ""},
		{"id without definition", model.LRPDeploymentUpdate{DefinitionID: str("v2")}, false, ""},
		{"empty id with definition", model.LRPDeploymentUpdate{DefinitionID: str(""), Definition: def("")}, false, ""},
		{"bad id with definition", model.LRPDeploymentUpdate{DefinitionID: str("v 2"), Definition: def("")}, false, ""},
		{"invalid definition", model.LRPDeploymentUpdate{DefinitionID: str("v2"), Definition: &model.LRPDefinition{RootFS: "docker:///x"}}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := c.update.DesiredLRPUpdate()
			check(t, err, c.valid)
			if !c.valid {
				return
			}
			if u == nil {
				t.Fatal("valid update gave a nil DesiredLRPUpdate")
			}
			if u.Instances != c.update.Instances || u.Annotation != c.update.Annotation || u.Routes != c.update.Routes {
				t.Errorf("DesiredLRPUpdate does not carry the request's fields: %+v", u)
			}
			switch {
			case c.wantID == "" && u.Definition != nil:
				t.Errorf("unexpected definition %+v", u.Definition)
			case c.wantID != "" && (u.Definition == nil || u.Definition.DefinitionID != c.wantID):
				t.Errorf("want definition %q, got %+v", c.wantID, u.Definition)
			}
		})
	}
}

func TestDomainValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		domain model.Domain
		valid  bool
	}{
		{"valid, never expires", model.Domain{Name: "cf-apps", TTL: 0}, true},
		{"valid ttl", model.Domain{Name: "cf-apps", TTL: 120}, true},
		{"empty name", model.Domain{Name: "", TTL: 120}, false},
		{"255-char name", model.Domain{Name: strings.Repeat("d", 255)}, true},
		{"256-char name", model.Domain{Name: strings.Repeat("d", 256)}, false},
		{"ttl -1", model.Domain{Name: "cf-apps", TTL: -1}, false},
		{"ttl min int64", model.Domain{Name: "cf-apps", TTL: -1 << 63}, false},
		{"ttl at the limit", model.Domain{Name: "cf-apps", TTL: model.MaxDomainTTL}, true},
		{"ttl one over the limit", model.Domain{Name: "cf-apps", TTL: model.MaxDomainTTL + 1}, false},
		{"ttl max int64", model.Domain{Name: "cf-apps", TTL: 1<<63 - 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, c.domain.Validate(), c.valid)
		})
	}
}

func TestActualLRPFilterValidate(t *testing.T) {
	idx := func(i int32) *int32 { return &i }
	for _, c := range []struct {
		name   string
		filter model.ActualLRPFilter
		valid  bool
	}{
		{"empty", model.ActualLRPFilter{}, true},
		{"domain and cell", model.ActualLRPFilter{Domain: "cf-apps", CellID: "cell-1"}, true},
		{"process_guid", model.ActualLRPFilter{ProcessGUID: "web-1"}, true},
		{"process_guid and index 0", model.ActualLRPFilter{ProcessGUID: "web-1", Index: idx(0)}, true},
		{"process_guid, index and definition", model.ActualLRPFilter{ProcessGUID: "web-1", Index: idx(3), DefinitionID: "v1"}, true},
		{"index without process_guid", model.ActualLRPFilter{Index: idx(0)}, false},
		{"negative index", model.ActualLRPFilter{ProcessGUID: "web-1", Index: idx(-1)}, false},
		{"negative index without process_guid", model.ActualLRPFilter{Index: idx(-1)}, false},
		{"bad process_guid", model.ActualLRPFilter{ProcessGUID: "web/1"}, false},
		{"long process_guid", model.ActualLRPFilter{ProcessGUID: strings.Repeat("p", 256)}, false},
		{"bad definition_id", model.ActualLRPFilter{DefinitionID: "v.1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, c.filter.Validate(), c.valid)
		})
	}
}

func TestDesiredLRPFilterValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		filter model.DesiredLRPFilter
		valid  bool
	}{
		{"empty", model.DesiredLRPFilter{}, true},
		{"domain", model.DesiredLRPFilter{Domain: "cf-apps"}, true},
		{"guids", model.DesiredLRPFilter{ProcessGUIDs: []string{"a", "b-2"}}, true},
		{"empty guid", model.DesiredLRPFilter{ProcessGUIDs: []string{"a", ""}}, false},
		{"bad guid", model.DesiredLRPFilter{ProcessGUIDs: []string{"a b"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, c.filter.Validate(), c.valid)
		})
	}
}

func TestErrorTypeOf(t *testing.T) {
	if got := model.TypeOf(nil); got != model.ErrUnknown {
		t.Errorf("TypeOf(nil) = %s", got)
	}
	e := model.Errorf(model.ErrInvalidRequest, "x %d", 1)
	if got := model.TypeOf(e); got != model.ErrInvalidRequest {
		t.Errorf("TypeOf = %s", got)
	}
	if !model.IsType(e, model.ErrInvalidRequest) || model.IsType(nil, model.ErrUnknown) {
		t.Error("IsType")
	}
	if e.Error() != "InvalidRequest: x 1" {
		t.Errorf("Error() = %q", e.Error())
	}
}

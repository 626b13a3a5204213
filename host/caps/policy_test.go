package caps_test

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string // want: the whole error; "" = valid
	}{
		{"empty", `{}`, ""},
		{"null", `null`, ""},
		{"full", `{
			"plugins": {
				"notes": {"files": {"paths": [{"path": "$HOME/notes", "mode": "rw"}]},
				          "process": {"commands": ["git"], "cwd": ["$HOME/notes"], "shell": true}},
				"indexer": {"state": {"max_bytes": 1048576}, "cdp": {"methods": ["Page.*"]}, "upstream": {"servers": ["docs"]}}
			},
			"default": {"state": {}},
			"limits": {"default_timeout_ms": 1000, "max_timeout_ms": 2000, "default_memory_mib": 64, "max_memory_mib": 128,
			           "default_max_result_bytes": 1024, "max_result_bytes": 2048, "max_instances": 2}
		}`, ""},
		{"null entry", `{"plugins": {"p": null}}`, ""},
		{"negative limits", `{"limits": {"max_timeout_ms": -1}}`, ""},
		{"unknown field", `{"plugin": {}}`, `invalid policy: json: unknown field "plugin"`},
		{"unknown family", `{"default": {"net": {}}}`, `invalid policy: json: unknown field "net"`},
		{"unknown limit", `{"limits": {"max_cpu": 1}}`, `invalid policy: json: unknown field "max_cpu"`},
		{"wrong case", `{"Plugins": {}}`, `invalid policy: json: unknown field "Plugins"`},
		{"duplicate plugin", `{"plugins": {"p": {}, "p": {"state": {}}}}`, `invalid policy: json: duplicate field "p"`},
		{"duplicate field", `{"default": {}, "default": {"state": {}}}`, `invalid policy: json: duplicate field "default"`},
		{"trailing", `{} {}`, "invalid policy: trailing data after JSON value"},
		{"trailing brace", `{"default": {}}}`, "invalid policy: trailing data after JSON value"},
		{"not an object", `[]`, "invalid policy: json: cannot unmarshal array into Go value of type caps.Policy"},
		{"plugin path", `{"plugins": {"notes": {"files": {"paths": [{"path": "data", "mode": "rw"}]}}}}`,
			`invalid policy: plugin notes: files: path "data" must be absolute or start with one of [$SANDBOX $HOME $TMP $WORKSPACE]`},
		{"plugin mode", `{"plugins": {"notes": {"files": {"paths": [{"path": "/srv", "mode": "x"}]}}}}`,
			`invalid policy: plugin notes: files: path "/srv": mode must be "ro" or "rw"`},
		{"default commands", `{"default": {"process": {"commands": []}}}`,
			"invalid policy: default: process: commands must list at least one program"},
		{"default cwd", `{"default": {"process": {"commands": ["*"], "cwd": ["$PWD"]}}}`,
			`invalid policy: default: process: cwd: path "$PWD" must be absolute or start with one of [$SANDBOX $HOME $TMP $WORKSPACE]`},
		{"state", `{"default": {"state": {"max_bytes": -1}}}`, "invalid policy: default: state: max_bytes must be non-negative"},
		{"limit type", `{"limits": {"max_instances": "4"}}`,
			"invalid policy: json: cannot unmarshal string into Go struct field OperatorLimits.limits.max_instances of type int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := caps.ParsePolicy([]byte(tc.doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ParsePolicy: %v", err)
			case tc.want == "" && p == nil:
				t.Fatal("no policy and no error")
			case tc.want == "":
			case err == nil:
				t.Fatalf("ParsePolicy accepts it, want %q", tc.want)
			case err.Error() != tc.want:
				t.Fatalf("ParsePolicy:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

// The environment most Allow tests run in.
var (
	ada   = caps.Env{Home: "/home/ada", Tmp: "/tmp"}
	adaWS = caps.Env{Home: "/home/ada", Tmp: "/tmp", Workspace: "/home/ada/proj"}
)

func files(paths ...string) *abi.FilesScope {
	s := &abi.FilesScope{}
	for i := 0; i < len(paths); i += 2 {
		s.Paths = append(s.Paths, abi.PathScope{Path: paths[i], Mode: abi.Mode(paths[i+1])})
	}
	return s
}

func roots(rs ...any) []caps.Root {
	var out []caps.Root
	for i := 0; i < len(rs); i += 2 {
		out = append(out, caps.Root{Path: rs[i].(string), Writable: rs[i+1].(bool)})
	}
	return out
}

func TestAllowFiles(t *testing.T) {
	for _, tc := range []struct {
		name       string
		req, allow *abi.FilesScope
		env        caps.Env
		want       []caps.Root
	}{
		{"same tree", files("/srv", "rw"), files("/srv", "rw"), ada, roots("/srv", true)},
		{"request inside allowance", files("/srv/data/in", "rw"), files("/srv", "rw"), ada, roots("/srv/data/in", true)},
		{"allowance inside request", files("/", "ro"), files("/srv", "rw", "/etc", "ro"), ada, roots("/srv", false, "/etc", false)},
		{"disjoint", files("/a", "rw"), files("/b", "rw"), ada, nil},
		{"sibling with a common prefix", files("/srv/data2", "ro"), files("/srv/data", "ro"), ada, nil},
		{"parent of allowance by prefix only", files("/srv/dat", "ro"), files("/srv/data", "ro"), ada, nil},
		{"ro request, rw allowance", files("/srv", "ro"), files("/srv", "rw"), ada, roots("/srv", false)},
		{"rw request, ro allowance", files("/srv", "rw"), files("/srv", "ro"), ada, roots("/srv", false)},
		{"two pairs, one writable", files("/srv", "rw", "/srv", "ro"), files("/srv", "rw"), ada, roots("/srv", true)},
		{"two allowances, one writable", files("/srv/x", "rw"), files("/srv", "ro", "/srv/x", "rw"), ada, roots("/srv/x", true)},
		{"nested writable inside read-only", files("/srv", "rw"), files("/srv", "ro", "/srv/out", "rw"), ada,
			roots("/srv", false, "/srv/out", true)},
		{"sandbox without workspace", files("$SANDBOX", "rw"), files("$SANDBOX", "rw"), ada,
			roots("/tmp", true, "/home/ada", true)},
		{"sandbox with workspace", files("$SANDBOX", "rw"), files("$SANDBOX", "rw"), adaWS, roots("/home/ada/proj", true)},
		{"home inside tmp", files("$SANDBOX", "rw"), files("$SANDBOX", "rw"), caps.Env{Home: "/tmp/ada", Tmp: "/tmp"},
			roots("/tmp", true)},
		{"home against sandbox with workspace", files("$HOME", "rw"), files("$SANDBOX", "rw"), adaWS, roots("/home/ada/proj", true)},
		{"home against sandbox without workspace", files("$HOME/x", "rw"), files("$SANDBOX", "ro"), ada, roots("/home/ada/x", false)},
		{"home narrowed", files("$HOME", "ro"), files("$HOME/notes", "rw"), ada, roots("/home/ada/notes", false)},
		{"workspace without one", files("$WORKSPACE", "rw"), files("$WORKSPACE", "rw"), ada, nil},
		{"workspace", files("$WORKSPACE/src", "rw"), files("$WORKSPACE", "rw"), adaWS, roots("/home/ada/proj/src", true)},
		{"tmp", files("$TMP/x", "rw"), files("/tmp", "rw"), ada, roots("/tmp/x", true)},
		{"explicit path outside the workspace", files("/srv", "ro"), files("/srv", "ro"), adaWS, roots("/srv", false)},
		{"sandbox dot-dot climbs out of the request only", files("$SANDBOX/..", "rw"), files("$SANDBOX", "rw"), adaWS,
			roots("/home/ada/proj", true)},
		{"cleaned", files("/srv//a/./b/../c/", "rw"), files("/srv/a", "rw"), ada, roots("/srv/a/c", true)},
		{"no paths requested", files(), files("/", "rw"), ada, nil},
		{"no paths allowed", files("/", "rw"), files(), ada, nil},
		{"empty home", files("$HOME", "rw"), files("/", "rw"), caps.Env{Tmp: "/tmp"}, nil},
		{"relative home", files("$HOME", "rw"), files("/", "rw"), caps.Env{Home: "ada", Tmp: "/tmp"}, nil},
		{"empty environment", files("$SANDBOX", "rw"), files("/", "rw"), caps.Env{}, nil},
		{"empty environment on both sides", files("$SANDBOX", "rw"), files("$SANDBOX", "rw"), caps.Env{}, nil},
		{"relative home on both sides", files("$HOME", "rw"), files("$HOME", "rw"), caps.Env{Home: "ada", Tmp: "/tmp"}, nil},
		{"relative workspace leaves nothing", files("$SANDBOX", "rw"), files("/", "rw"), caps.Env{Home: "/home/ada", Tmp: "/tmp", Workspace: "proj"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &abi.Manifest{Name: "p", Capabilities: abi.Capabilities{Files: tc.req}}
			p := &caps.Policy{Plugins: map[string]abi.Capabilities{"p": {Files: tc.allow}}}
			g := p.Allow(m, tc.env)
			if !reflect.DeepEqual(g.FileRoots, tc.want) {
				t.Errorf("FileRoots = %v, want %v", g.FileRoots, tc.want)
			}
			if g.Has(abi.FamilyFiles) != (len(tc.want) > 0) {
				t.Errorf("Has(files) = %v with roots %v", g.Has(abi.FamilyFiles), g.FileRoots)
			}
		})
	}
}

func TestAllowProcess(t *testing.T) {
	proc := func(cmds []string, cwd []string, shell bool) *abi.ProcessScope {
		return &abi.ProcessScope{Commands: cmds, Cwd: cwd, Shell: shell}
	}
	l := func(s ...string) []string { return s }
	for _, tc := range []struct {
		name       string
		req, allow *abi.ProcessScope
		env        caps.Env
		cmds, cwd  []string
		shell      bool
	}{
		{"common commands", proc(l("git", "ls"), nil, false), proc(l("git", "rm"), nil, false), adaWS, l("git"), l("/home/ada/proj"), false},
		{"allowance any", proc(l("git", "ls"), nil, false), proc(l("*"), nil, false), adaWS, l("git", "ls"), l("/home/ada/proj"), false},
		{"request any", proc(l("*"), nil, false), proc(l("git", "ls"), nil, false), adaWS, l("git", "ls"), l("/home/ada/proj"), false},
		{"both any", proc(l("*"), nil, false), proc(l("*"), nil, false), adaWS, l("*"), l("/home/ada/proj"), false},
		{"names are compared as written", proc(l("git"), nil, false), proc(l("/usr/bin/git"), nil, false), adaWS, nil, l("/home/ada/proj"), false},
		{"no common command", proc(l("rm"), nil, false), proc(l("git"), nil, false), adaWS, nil, l("/home/ada/proj"), false},
		{"cwd defaults to the sandbox", proc(l("git"), nil, false), proc(l("git"), nil, false), ada, l("git"), l("/tmp", "/home/ada"), false},
		{"cwd narrowed", proc(l("git"), l("$HOME"), false), proc(l("git"), l("$HOME/src"), false), ada, l("git"), l("/home/ada/src"), false},
		{"cwd outside the default", proc(l("git"), l("/srv"), false), proc(l("git"), nil, false), adaWS, l("git"), nil, false},
		{"cwd workspace without one", proc(l("git"), l("$WORKSPACE"), false), proc(l("git"), l("$WORKSPACE"), false), ada, l("git"), nil, false},
		{"shell both", proc(l("bash"), nil, true), proc(l("bash"), nil, true), adaWS, l("bash"), l("/home/ada/proj"), true},
		{"shell requested only", proc(l("bash"), nil, true), proc(l("bash"), nil, false), adaWS, l("bash"), l("/home/ada/proj"), false},
		{"shell allowed only", proc(l("bash"), nil, false), proc(l("bash"), nil, true), adaWS, l("bash"), l("/home/ada/proj"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &abi.Manifest{Name: "p", Capabilities: abi.Capabilities{Process: tc.req}}
			p := &caps.Policy{Default: &abi.Capabilities{Process: tc.allow}}
			g := p.Allow(m, tc.env)
			if !slices.Equal(g.Commands, tc.cmds) || !slices.Equal(g.CwdRoots, tc.cwd) || g.Shell != tc.shell {
				t.Errorf("commands %v cwd %v shell %v, want %v %v %v", g.Commands, g.CwdRoots, g.Shell, tc.cmds, tc.cwd, tc.shell)
			}
			if want := len(tc.cmds) > 0 && len(tc.cwd) > 0; g.Has(abi.FamilyProcess) != want {
				t.Errorf("Has(process) = %v, want %v", g.Has(abi.FamilyProcess), want)
			}
		})
	}
}

func TestAllowFamiliesAndDefault(t *testing.T) {
	everything := abi.Capabilities{
		Files:    files("$SANDBOX", "rw"),
		Process:  &abi.ProcessScope{Commands: []string{"*"}},
		State:    &abi.StateScope{},
		CDP:      &abi.CDPScope{Methods: []string{"*"}},
		Upstream: &abi.UpstreamScope{Servers: []string{"*"}},
	}
	all := []abi.Family{abi.FamilyFiles, abi.FamilyProcess, abi.FamilyState, abi.FamilyCDP, abi.FamilyUpstream}
	for _, tc := range []struct {
		name   string
		policy *caps.Policy
		req    abi.Capabilities
		want   []abi.Family
	}{
		{"no policy: deny by default", &caps.Policy{}, everything, nil},
		{"an entry for another plugin", &caps.Policy{Plugins: map[string]abi.Capabilities{"other": everything}}, everything, nil},
		{"default", &caps.Policy{Default: &everything}, everything, all},
		{"entry", &caps.Policy{Plugins: map[string]abi.Capabilities{"p": everything}}, everything, all},
		{"entry replaces default", &caps.Policy{Plugins: map[string]abi.Capabilities{"p": {State: &abi.StateScope{}}}, Default: &everything},
			everything, []abi.Family{abi.FamilyState}},
		{"empty entry grants nothing", &caps.Policy{Plugins: map[string]abi.Capabilities{"p": {}}, Default: &everything}, everything, nil},
		{"nothing requested", &caps.Policy{Default: &everything}, abi.Capabilities{}, nil},
		{"only what is requested", &caps.Policy{Default: &everything}, abi.Capabilities{State: &abi.StateScope{}, CDP: &abi.CDPScope{Methods: []string{"Page.*"}}},
			[]abi.Family{abi.FamilyState, abi.FamilyCDP}},
		{"files requested, no tree in common", &caps.Policy{Default: &abi.Capabilities{Files: files("/srv", "rw")}},
			abi.Capabilities{Files: files("/etc", "ro")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.policy.Allow(&abi.Manifest{Name: "p", Capabilities: tc.req}, ada)
			if got := g.GrantedFamilies(); !slices.Equal(got, tc.want) {
				t.Errorf("GrantedFamilies = %v, want %v", got, tc.want)
			}
			for _, f := range all {
				if g.Has(f) != slices.Contains(tc.want, f) {
					t.Errorf("Has(%s) = %v", f, g.Has(f))
				}
			}
			if len(tc.want) == 0 && (g.FileRoots != nil || g.Commands != nil || g.CwdRoots != nil || g.Shell || g.StateMaxBytes != 0) {
				t.Errorf("no family granted, but the grant holds scope: %+v", g)
			}
		})
	}
}

func TestAllowState(t *testing.T) {
	for _, tc := range []struct{ req, allow, want int64 }{
		{0, 0, 1 << 20},
		{100, 0, 100},
		{0, 200, 200},
		{100, 200, 100},
		{300, 200, 200},
	} {
		m := &abi.Manifest{Name: "p", Capabilities: abi.Capabilities{State: &abi.StateScope{MaxBytes: tc.req}}}
		p := &caps.Policy{Default: &abi.Capabilities{State: &abi.StateScope{MaxBytes: tc.allow}}}
		if g := p.Allow(m, ada); g.StateMaxBytes != tc.want || !g.Has(abi.FamilyState) {
			t.Errorf("request %d, policy %d: StateMaxBytes %d (granted %v), want %d", tc.req, tc.allow, g.StateMaxBytes, g.Has(abi.FamilyState), tc.want)
		}
	}
}

func TestAllowLimits(t *testing.T) {
	type limits struct {
		timeout   time.Duration
		pages     uint32
		result    int64
		instances int
	}
	mib := func(n uint32) uint32 { return n * 16 }
	defaults := limits{30 * time.Second, mib(256), 16 << 20, 16}
	for _, tc := range []struct {
		name string
		ask  abi.Limits
		op   caps.OperatorLimits
		want limits
	}{
		{"host defaults", abi.Limits{}, caps.OperatorLimits{}, defaults},
		{"asks within the caps", abi.Limits{TimeoutMs: 5000, MemoryMiB: 64, MaxResultBytes: 1000, MaxInstances: 2}, caps.OperatorLimits{},
			limits{5 * time.Second, mib(64), 1000, 2}},
		{"asks above the host caps", abi.Limits{TimeoutMs: 3600_000, MemoryMiB: 4096, MaxResultBytes: 1 << 30, MaxInstances: 100}, caps.OperatorLimits{},
			limits{10 * time.Minute, mib(1024), 64 << 20, 16}},
		{"operator defaults", abi.Limits{}, caps.OperatorLimits{DefaultTimeoutMs: 1000, DefaultMemoryMiB: 32, DefaultMaxResultBytes: 99, MaxInstances: 3},
			limits{time.Second, mib(32), 99, 3}},
		{"operator caps", abi.Limits{TimeoutMs: 5000, MemoryMiB: 512, MaxResultBytes: 5000, MaxInstances: 8},
			caps.OperatorLimits{MaxTimeoutMs: 2000, MaxMemoryMiB: 128, MaxResultBytes: 4000, MaxInstances: 4},
			limits{2 * time.Second, mib(128), 4000, 4}},
		{"operator raises the caps", abi.Limits{TimeoutMs: 3600_000, MemoryMiB: 4096, MaxResultBytes: 1 << 30},
			caps.OperatorLimits{MaxTimeoutMs: 7200_000, MaxMemoryMiB: 4096, MaxResultBytes: 1 << 31},
			limits{time.Hour, mib(4096), 1 << 30, 16}},
		{"default above its cap is capped", abi.Limits{}, caps.OperatorLimits{DefaultTimeoutMs: 9000, MaxTimeoutMs: 5000, DefaultMemoryMiB: 512, MaxMemoryMiB: 256},
			limits{5 * time.Second, mib(256), 16 << 20, 16}},
		{"negative operator values count as absent", abi.Limits{}, caps.OperatorLimits{DefaultTimeoutMs: -1, MaxMemoryMiB: -1, MaxInstances: -1}, defaults},
		{"memory never above 4096 MiB", abi.Limits{}, caps.OperatorLimits{DefaultMemoryMiB: 1 << 28, MaxMemoryMiB: 1 << 30},
			limits{30 * time.Second, 65536, 16 << 20, 16}},
		{"huge timeouts do not overflow", abi.Limits{TimeoutMs: math.MaxInt64}, caps.OperatorLimits{MaxTimeoutMs: math.MaxInt64},
			limits{time.Duration(math.MaxInt64 / int64(time.Millisecond) * int64(time.Millisecond)), mib(256), 16 << 20, 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &caps.Policy{Limits: tc.op}
			g := p.Allow(&abi.Manifest{Name: "p", Limits: tc.ask}, ada)
			got := limits{g.Timeout, g.MemoryPages, g.MaxResultBytes, g.MaxInstances}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEnvResolve(t *testing.T) {
	l := func(s ...string) []string { return s }
	for _, tc := range []struct {
		env  caps.Env
		path string
		want []string
	}{
		{ada, "/srv/data", l("/srv/data")},
		{ada, "/srv//data/../x/", l("/srv/x")},
		{ada, "/", l("/")},
		{ada, "/..", l("/")},
		{ada, "$HOME", l("/home/ada")},
		{ada, "$HOME/", l("/home/ada")},
		{ada, "$HOME/.cache/p", l("/home/ada/.cache/p")},
		{ada, "$HOME/..", l("/home")},
		{ada, "$TMP/x", l("/tmp/x")},
		{ada, "$SANDBOX", l("/tmp", "/home/ada")},
		{ada, "$SANDBOX/x", l("/tmp/x", "/home/ada/x")},
		{adaWS, "$SANDBOX/x", l("/home/ada/proj/x")},
		{adaWS, "$WORKSPACE", l("/home/ada/proj")},
		{adaWS, "$HOME", l("/home/ada")},
		{caps.Env{Home: "/home/ada/", Tmp: "/tmp/"}, "$HOME/x", l("/home/ada/x")},
		{caps.Env{Home: "/tmp/ada", Tmp: "/tmp"}, "$SANDBOX", l("/tmp")},
		{caps.Env{Home: "/", Tmp: "/tmp"}, "$SANDBOX", l("/tmp", "/")},
		{ada, "$WORKSPACE", nil},
		{caps.Env{Tmp: "/tmp"}, "$HOME", nil},
		{caps.Env{Home: "ada", Tmp: "tmp"}, "$HOME", nil},
		{caps.Env{Home: "ada", Tmp: "tmp"}, "$SANDBOX", nil},
		{caps.Env{Home: "/home/ada"}, "$SANDBOX", l("/home/ada")},
		{caps.Env{Workspace: "proj", Home: "/home/ada", Tmp: "/tmp"}, "$SANDBOX", nil},
		{ada, "$HOMEdir", nil},
		{ada, "$USER", nil},
		{ada, "relative", nil},
		{ada, "", nil},
		{ada, "~", nil},
	} {
		got := tc.env.Resolve(tc.path)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v Resolve(%q) = %q, want %q", tc.env, tc.path, got, tc.want)
		}
	}
}

func TestAllowCDPAndUpstream(t *testing.T) {
	l := func(s ...string) []string { return s }
	for _, tc := range []struct {
		name             string
		req, allow       []string
		reqNew, allowNew bool
		want             []string
		newTargets       bool
		allowed, denied  []string
	}{
		{"allowed glob covers exact", l("Page.navigate"), l("Page.*"), false, false, l("Page.navigate"), false, l("Page.navigate"), l("Page.reload", "Runtime.evaluate")},
		{"requested glob narrowed to allowed exact", l("Page.*"), l("Page.navigate", "Input.dispatchKeyEvent"), false, false, l("Page.navigate"), false, l("Page.navigate"), l("Page.reload", "Input.dispatchKeyEvent")},
		{"prefix patterns", l("Input.dispatch*"), l("Input.*"), false, false, l("Input.dispatch*"), false, l("Input.dispatchMouseEvent", "Input.dispatchKeyEvent"), l("Input.insertText")},
		{"star allows what is asked", l("Page.*", "Runtime.evaluate"), l("*"), false, false, l("Page.*", "Runtime.evaluate"), false, l("Page.navigate", "Runtime.evaluate"), l("Browser.close", "Runtime.callFunctionOn")},
		{"nothing in common", l("Browser.*"), l("Page.*"), false, false, nil, false, nil, l("Browser.close", "Page.navigate")},
		{"new targets both", l("Target.*"), l("Target.*"), true, true, l("Target.*"), true, l("Target.createTarget"), nil},
		{"new targets requested only", l("Page.*"), l("Page.*"), true, false, l("Page.*"), false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &abi.Manifest{Name: "p", Capabilities: abi.Capabilities{CDP: &abi.CDPScope{Methods: tc.req, NewTargets: tc.reqNew}}}
			p := &caps.Policy{Default: &abi.Capabilities{CDP: &abi.CDPScope{Methods: tc.allow, NewTargets: tc.allowNew}}}
			g := p.Allow(m, ada)
			if !slices.Equal(g.CDPMethods, tc.want) || g.CDPNewTargets != tc.newTargets {
				t.Errorf("methods %v new targets %v, want %v %v", g.CDPMethods, g.CDPNewTargets, tc.want, tc.newTargets)
			}
			if g.Has(abi.FamilyCDP) != (len(tc.want) > 0) {
				t.Errorf("Has(cdp) = %v", g.Has(abi.FamilyCDP))
			}
			for _, mth := range tc.allowed {
				if !g.MethodAllowed(mth) {
					t.Errorf("%s denied", mth)
				}
			}
			for _, mth := range tc.denied {
				if g.MethodAllowed(mth) {
					t.Errorf("%s allowed", mth)
				}
			}
		})
	}
	m := &abi.Manifest{Name: "p", Capabilities: abi.Capabilities{Upstream: &abi.UpstreamScope{Servers: l("docs", "peer")}}}
	g := (&caps.Policy{Default: &abi.Capabilities{Upstream: &abi.UpstreamScope{Servers: l("peer", "other")}}}).Allow(m, ada)
	if !g.Has(abi.FamilyUpstream) || !g.UpstreamAllowed("peer") || g.UpstreamAllowed("docs") || g.UpstreamAllowed("other") {
		t.Errorf("upstream grant %v", g.UpstreamServers)
	}
}

func TestFuelLimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ask, def, max int64
		want          int64
	}{
		{"unmetered by default", 0, 0, 0, 0},
		{"asked", 1000, 0, 0, 1000},
		{"operator default", 0, 500, 0, 500},
		{"capped", 5000, 0, 2000, 2000},
		{"cap meters the unmetered", 0, 0, 2000, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &abi.Manifest{Name: "p", Limits: abi.Limits{Fuel: tc.ask}}
			g := (&caps.Policy{Limits: caps.OperatorLimits{DefaultFuel: tc.def, MaxFuel: tc.max}}).Allow(m, ada)
			if g.Fuel != tc.want {
				t.Errorf("fuel %d, want %d", g.Fuel, tc.want)
			}
		})
	}
}

// TestAllowHTTP: the http grant keeps the narrower of each requested and
// allowed host pattern, compared case-insensitively.
func TestAllowHTTP(t *testing.T) {
	l := func(s ...string) []string { return s }
	for _, tc := range []struct {
		name            string
		req, allow      []string
		want            []string
		allowed, denied []string
	}{
		{"exact under a glob", l("api.example.com"), l("*.example.com"), l("api.example.com"), l("api.example.com", "API.Example.com"), l("www.example.com", "example.com")},
		{"glob narrowed to exact", l("*"), l("api.github.com"), l("api.github.com"), l("api.github.com"), l("github.com", "api.github.com.evil.net")},
		{"upper case asked", l("API.Example.COM"), l("api.example.com"), l("api.example.com"), l("api.example.com"), nil},
		{"nothing in common", l("a.test"), l("b.test"), nil, nil, l("a.test", "b.test")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &abi.Manifest{Name: "p", Capabilities: abi.Capabilities{HTTP: &abi.HTTPScope{Hosts: tc.req}}}
			g := (&caps.Policy{Default: &abi.Capabilities{HTTP: &abi.HTTPScope{Hosts: tc.allow}}}).Allow(m, ada)
			if !slices.Equal(g.HTTPHosts, tc.want) || g.Has(abi.FamilyHTTP) != (len(tc.want) > 0) {
				t.Errorf("hosts %v (granted %v), want %v", g.HTTPHosts, g.Has(abi.FamilyHTTP), tc.want)
			}
			for _, h := range tc.allowed {
				if !g.HostAllowed(h) {
					t.Errorf("%s denied", h)
				}
			}
			for _, h := range tc.denied {
				if g.HostAllowed(h) {
					t.Errorf("%s allowed", h)
				}
			}
		})
	}
	// not requested: not granted, whatever the policy allows
	g := (&caps.Policy{Default: &abi.Capabilities{HTTP: &abi.HTTPScope{Hosts: l("*")}}}).Allow(&abi.Manifest{Name: "p"}, ada)
	if g.Has(abi.FamilyHTTP) || g.HostAllowed("x.test") {
		t.Error("http granted without being requested")
	}
}

package placement

import (
	"encoding/json"
	"flag"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

func TestParseAffinity(t *testing.T) {
	for _, c := range []struct {
		in   string
		want sched.Affinity
		str  string
	}{
		{"cpu", sched.AnyWorker, "cpu"},
		{"ANY", sched.AnyWorker, "cpu"},
		{"worker", sched.AnyWorker, "cpu"},
		{" gpu ", sched.GPU, "gpu"},
		{"spu", sched.SPU, "spu"},
		{"Auto", sched.Auto, "auto"},
		{"thread:0", sched.OnThread(0), "thread:0"},
		{"thread:1", sched.OnThread(1), "thread:1"},
		{"thread(7)", sched.OnThread(7), "thread:7"},
		{"thread:65535", sched.OnThread(65535), "thread:65535"},
	} {
		m, err := ParseAffinity(c.in)
		if err != nil {
			t.Fatalf("ParseAffinity(%q): %v", c.in, err)
		}
		if m.Affinity() != c.want || m.String() != c.str {
			t.Errorf("ParseAffinity(%q) = %v (%q), want %v (%q)", c.in, m.Affinity(), m.String(), c.want, c.str)
		}
		if back, err := ParseAffinity(m.String()); err != nil || back != m {
			t.Errorf("round trip of %q: %v %v", c.in, back, err)
		}
		// sched's own spelling parses too.
		if back, err := ParseAffinity(m.Affinity().String()); err != nil || back != m {
			t.Errorf("sched spelling %q: %v %v", m.Affinity().String(), back, err)
		}
	}
	for _, bad := range []string{"", "gpu0", "thread:", "thread:-1", "thread:65536", "thread(3", "thread:x", "cpu,gpu"} {
		if _, err := ParseAffinity(bad); err == nil {
			t.Errorf("ParseAffinity(%q) accepted", bad)
		}
	}
	if i, ok := Affinity(sched.OnThread(3)).Thread(); !ok || i != 3 {
		t.Error("Thread of thread:3")
	}
	if !Affinity(sched.GPU).Device() || !Affinity(sched.SPU).Device() || Affinity(sched.Auto).Device() || Affinity(sched.AnyWorker).Device() {
		t.Error("Device")
	}
}

func TestMaskFlagAndJSON(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var where Affinity
	fs.Var(&where, "where", "cpu, gpu, spu, auto or thread:N")
	if err := fs.Parse([]string{"-where", "thread:2"}); err != nil {
		t.Fatal(err)
	}
	if where.Affinity() != sched.OnThread(2) {
		t.Fatalf("flag gave %v", where)
	}
	fs.SetOutput(discard{})
	if err := fs.Parse([]string{"-where", "tpu"}); err == nil {
		t.Fatal("flag accepted tpu")
	}
	var cfg struct{ Where []Affinity }
	if err := json.Unmarshal([]byte(`{"Where":["auto","gpu","thread:1"]}`), &cfg); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil || string(b) != `{"Where":["auto","gpu","thread:1"]}` {
		t.Fatalf("JSON round trip: %s %v", b, err)
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

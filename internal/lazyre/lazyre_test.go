package lazyre

import "testing"

func TestLazy(t *testing.T) {
	r := New(`a(b+)c`)
	if r.re != nil {
		t.Fatal("compiled before first use")
	}
	if m := r.FindStringSubmatch("xabbc"); len(m) != 2 || m[1] != "bb" {
		t.Fatalf("FindStringSubmatch = %q", m)
	}
	if r.re == nil || r.Get() != r.re {
		t.Fatal("not compiled once")
	}
	New(`(`)
	if bad, err := CompileAll(); bad != `(` || err == nil {
		t.Fatalf("CompileAll = %q, %v; want the bad expression", bad, err)
	}
}

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

func TestSameExpressionCompiledOnce(t *testing.T) {
	a, b := New(`x(y+)z`), New(`x(y+)z`)
	if a != b {
		t.Fatal("two Regexps for one expression: it would be compiled twice")
	}
	if New(`x(y+)zz`) == a {
		t.Fatal("another expression shares the first's Regexp")
	}
}

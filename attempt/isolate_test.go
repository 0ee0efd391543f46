package attempt

import (
	"os"
	"path/filepath"
	"testing"
)

// copyTree copies a symlink as what it points to (SPEC §4.1), so the agent's writes in its
// worktree never reach a file outside it; a link within a copied directory stays a link.
func TestCopyTreeLinks(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	home := filepath.Join(root, "home")
	for _, d := range []string{outside, filepath.Join(home, "cfg", "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.env"), "SECRET=1\n")
	write(filepath.Join(home, "cfg", "sub", "a.txt"), "a\n")
	links := map[string]string{
		filepath.Join(home, ".env"):            filepath.Join(outside, "secret.env"), // top level, absolute
		filepath.Join(home, "cfg", "abs.env"):  filepath.Join(outside, "secret.env"), // nested, absolute
		filepath.Join(home, "cfg", "rel.env"):  "../../outside/secret.env",           // nested, escaping
		filepath.Join(home, "cfg", "inside"):   "sub/a.txt",                          // nested, within
		filepath.Join(home, "cfg", "dangling"): "nowhere",
	}
	for p, target := range links {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(root, "wt")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".env", "cfg"} {
		if err := copyTree(filepath.Join(home, name), filepath.Join(dst, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{".env", "cfg/abs.env", "cfg/rel.env"} {
		p := filepath.Join(dst, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v, %v; want a regular file", name, fi, err)
		}
		if b, _ := os.ReadFile(p); string(b) != "SECRET=1\n" {
			t.Fatalf("%s holds %q", name, b)
		}
	}
	if target, err := os.Readlink(filepath.Join(dst, "cfg", "inside")); err != nil || target != "sub/a.txt" {
		t.Fatalf("cfg/inside: %q, %v; want the link kept", target, err)
	}
	if err := os.WriteFile(filepath.Join(dst, ".env"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.env")); string(b) != "SECRET=1\n" {
		t.Fatalf("a write in the worktree reached the file outside: %q", b)
	}
}

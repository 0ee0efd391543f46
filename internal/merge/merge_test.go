package merge

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestTextMergesHunks(t *testing.T) {
	base := lines(40)
	ours := strings.Replace(base, "line 3\n", "line 3 by the user\n", 1)
	theirs := strings.Replace(base, "line 30\n", "line 30 by the agent\n", 1)
	res := Text([]byte(base), []byte(ours), []byte(theirs), Labels{})
	if res.Conflicts != 0 {
		t.Fatalf("conflicts %d:\n%s", res.Conflicts, res.Text)
	}
	want := strings.Replace(ours, "line 30\n", "line 30 by the agent\n", 1)
	if string(res.Text) != want {
		t.Fatalf("merged:\n%s\nwant:\n%s", res.Text, want)
	}
}

func TestTextConflict(t *testing.T) {
	base := "a\nb\nc\n"
	res := Text([]byte(base), []byte("a\nB1\nc\n"), []byte("a\nB2\nc\n"), Labels{Ours: "yours", Theirs: "agent"})
	want := "a\n<<<<<<< yours\nB1\n=======\nB2\n>>>>>>> agent\nc\n"
	if res.Conflicts != 1 || string(res.Text) != want {
		t.Fatalf("got %d conflicts:\n%s\nwant:\n%s", res.Conflicts, res.Text, want)
	}
	// The same change on both sides is no conflict.
	if res := Text([]byte(base), []byte("a\nX\nc\n"), []byte("a\nX\nc\n"), Labels{}); res.Conflicts != 0 || string(res.Text) != "a\nX\nc\n" {
		t.Fatalf("same change: %d conflicts:\n%s", res.Conflicts, res.Text)
	}
}

func TestMode(t *testing.T) {
	for _, c := range []struct {
		base, ours, theirs, want uint32
		ok                       bool
	}{
		{0o100644, 0o100644, 0o100755, 0o100755, true},
		{0o100644, 0o100755, 0o100644, 0o100755, true},
		{0o100644, 0o100755, 0o100755, 0o100755, true},
		{0o100644, 0o120000, 0o100755, 0o120000, false},
	} {
		got, ok := Mode(c.base, c.ours, c.theirs)
		if got != c.want || ok != c.ok {
			t.Errorf("Mode(%o, %o, %o) = %o, %v; want %o, %v", c.base, c.ours, c.theirs, got, ok, c.want, c.ok)
		}
	}
}

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("line ")
		b.WriteString(itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestTextAgainstGit merges random edits of one file with Text and with `git merge-file`: where
// both merge cleanly the results are equal, and where either conflicts, both do (the hunks
// each diff finds may differ where a diff is ambiguous: repeated lines are kept rare).
func TestTextAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	n := 400
	if testing.Short() {
		n = 60
	}
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(1, 2))
	var clean, conflicted, differ int
	for i := 0; i < n; i++ {
		alphabet := 4 + rnd.IntN(60)
		base := randomText(rnd, rnd.IntN(30), alphabet)
		ours, theirs := edit(rnd, base, alphabet), edit(rnd, base, alphabet)
		got := Text([]byte(base), []byte(ours), []byte(theirs), Labels{Ours: "ours", Theirs: "theirs"})
		want, wantConflicts := gitMergeFile(t, git, dir, base, ours, theirs)
		switch {
		case got.Conflicts == 0 && wantConflicts == 0:
			clean++
			if string(got.Text) != want {
				t.Fatalf("case %d: clean merges differ\nbase:\n%s\nours:\n%s\ntheirs:\n%s\ngot:\n%s\ngit:\n%s", i, base, ours, theirs, got.Text, want)
			}
		case got.Conflicts > 0 && wantConflicts > 0:
			conflicted++
			if string(got.Text) != want {
				differ++
			}
		default:
			if alphabet > 40 {
				t.Errorf("case %d: %d conflicts, git %d\nbase:\n%s\nours:\n%s\ntheirs:\n%s\ngot:\n%s\ngit:\n%s", i, got.Conflicts, wantConflicts, base, ours, theirs, got.Text, want)
			}
			differ++
		}
	}
	t.Logf("%d clean (equal to git), %d conflicting, %d differing from git", clean, conflicted, differ)
	if differ > n/10 {
		t.Errorf("%d of %d merges differ from git's", differ, n)
	}
}

func randomText(rnd *rand.Rand, n, alphabet int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("w" + itoa(rnd.IntN(alphabet)) + "\n")
	}
	if n > 0 && rnd.IntN(8) == 0 {
		return strings.TrimSuffix(b.String(), "\n") // no newline at the end
	}
	return b.String()
}

func edit(rnd *rand.Rand, text string, alphabet int) string {
	ls := splitLines([]byte(text))
	for k := rnd.IntN(4); k > 0; k-- {
		at := rnd.IntN(len(ls) + 1)
		del := min(rnd.IntN(3), len(ls)-at)
		var ins [][]byte
		for j := rnd.IntN(3); j > 0; j-- {
			ins = append(ins, []byte("w"+itoa(rnd.IntN(alphabet))+"\n"))
		}
		ls = append(ls[:at], append(ins, ls[at+del:]...)...)
	}
	return string(bytes.Join(ls, nil))
}

func gitMergeFile(t *testing.T, git, dir, base, ours, theirs string) (string, int) {
	for name, s := range map[string]string{"base": base, "ours": ours, "theirs": theirs} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(git, "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", "ours", "base", "theirs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return string(out), exit.ExitCode()
	}
	t.Fatalf("git merge-file: %v", err)
	return "", 0
}

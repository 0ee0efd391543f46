package reap

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMembersWalksDescendants(t *testing.T) {
	self := os.Getpid()
	procs := []procInfo{
		{pid: 1, ppid: 0, pgid: 1},
		{pid: self, ppid: 1, pgid: self},
		{pid: 100, ppid: self, pgid: 100},              // the leader
		{pid: 101, ppid: 100, pgid: 100},               // its child
		{pid: 102, ppid: 101, pgid: 102},               // a grandchild in a session of its own
		{pid: 103, ppid: 102, pgid: 102, zombie: true}, // exited: not a member
		{pid: 200, ppid: 1, pgid: 200},                 // marked, re-parented to init
		{pid: 201, ppid: 200, pgid: 200},               // its child, environment cleared
		{pid: 300, ppid: self, pgid: 300},              // someone else's
	}
	got := members(procs, func(p procInfo) bool { return p.pid == 100 || p.pid == 200 })
	slices.Sort(got)
	if want := []int{100, 101, 102, 200, 201}; !slices.Equal(got, want) {
		t.Errorf("members = %v, want %v", got, want)
	}
}

// TestTreeEndsEscapedProcesses starts a shell that setsid's one sleeper, double-forks another
// with its environment cleared, and exits: Terminate ends both, and reaps what was re-parented.
func TestTreeEndsEscapedProcesses(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid(1)")
	}
	if !Become() {
		t.Skip("no child subreaper here")
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `setsid sleep 60 & echo $! > a; (env -i setsid sleep 60 & echo $! > b)`)
	cmd.Dir = dir
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Release()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range []string{"a", "b"} {
		data, err := os.ReadFile(dir + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		pids = append(pids, pid)
		if !Alive(pid) {
			t.Fatalf("sleeper %s (%d) is not running: the test proves nothing", f, pid)
		}
	}
	m := tree.Members()
	for _, pid := range pids {
		if !slices.Contains(m, pid) {
			t.Errorf("sleeper %d not found in the tree %v", pid, m)
		}
	}
	tree.Terminate(2 * time.Second)
	for _, pid := range pids {
		if Alive(pid) {
			t.Errorf("sleeper %d still alive", pid)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("sleeper %d left as a zombie of this process", pid)
		}
	}
}

// InGroup lists a process group's live members and their descendants; once they are killed and
// reaped (or only zombies are left), the group has none.
func TestInGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pg := cmd.Process.Pid
	var got []int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if got = InGroup(pg); len(got) >= 2 {
			break
		}
	}
	if len(got) < 2 || !slices.Contains(got, pg) {
		t.Fatalf("InGroup(%d) = %v, want the shell (or the sleeper it became) and the one in the background", pg, got)
	}
	syscall.Kill(-pg, syscall.SIGKILL)
	cmd.Wait()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if got = InGroup(pg); len(got) == 0 {
			return
		}
	}
	t.Errorf("InGroup(%d) = %v after the group was killed", pg, got)
}

// A process started after another has a start time at or after it: what lets Members skip the
// environment of every process older than the tree's leader.
func TestStartTimeOrders(t *testing.T) {
	self := startTime(os.Getpid())
	if self == 0 {
		t.Fatal("no start time for this process")
	}
	cmd := exec.Command("sleep", "5")
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Release()
	defer cmd.Wait()
	defer tree.Kill()
	if tree.since < self {
		t.Fatalf("leader started at %d, before this process (%d)", tree.since, self)
	}
	var found bool
	for _, p := range readProcs() {
		if p.pid == tree.Leader {
			found = p.start == tree.since
		}
	}
	if !found {
		t.Fatalf("readProcs has no leader %d with start %d", tree.Leader, tree.since)
	}
	if m := tree.Members(); !slices.Equal(m, []int{tree.Leader}) {
		t.Fatalf("Members = %v, want the leader %d", m, tree.Leader)
	}
}

// childless is what lets Members skip /proc when nothing this process started is left: true with
// no child, false while one runs and after it exited until it is waited for.
func TestChildless(t *testing.T) {
	if !childless() {
		t.Skip("this test process has children already")
	}
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if childless() {
		t.Fatal("childless with a child started")
	}
	time.Sleep(50 * time.Millisecond) // exited, a zombie until waited for
	if childless() {
		t.Fatal("childless with an exited child not yet waited for")
	}
	cmd.Wait()
	if !childless() {
		// Another test's orphan may have come back to this process (a subreaper) meanwhile:
		// only this test's child must be gone.
		if _, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid)); err == nil {
			t.Fatal("not childless after the only child was waited for")
		}
		t.Log("another child of the test process appeared meanwhile")
	}
}

package attempt

import (
	"syscall"
	"testing"
)

// A verify that printed no test results is summarised by the line that names its error, not by
// the boilerplate a tool prints after it; an exit status that means a timeout or a kill says so.
func TestVerifyMessage(t *testing.T) {
	for _, c := range []struct {
		code int
		sig  syscall.Signal
		out  string
		want string
	}{
		{1, 0, "\nERROR: JAVA_HOME is not set and no 'java' command could be found in your PATH.\n\nPlease set the JAVA_HOME variable in your environment to match the\nlocation of your Java installation.\n",
			"exited with status 1: ERROR: JAVA_HOME is not set and no 'java' command could be found in your PATH."},
		{2, 0, "c++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\nmake[1]: *** [CMakeFiles/Makefile2:83: CMakeFiles/engine.dir/all] Error 2\nmake: *** [Makefile:146: all] Error 2\n",
			"exited with status 2: c++: fatal error: Killed signal terminated program cc1plus"},
		{124, 0, "Randomized with seed 40917\n....\n\nRandomized with seed 40917\n",
			"exited with status 124 (timed out: `timeout` stopped it): Randomized with seed 40917"},
		{137, 0, "=== RUN   TestLoad\n", "exited with status 137 (killed by SIGKILL, out of memory as a rule): === RUN   TestLoad"},
		{-1, syscall.SIGKILL, "", "was killed by SIGKILL (out of memory, as a rule)"},
		{3, 0, "nope\n", "exited with status 3: nope"},
	} {
		if got := exitSays(c.code, c.sig) + verifySummary([]byte(c.out)); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

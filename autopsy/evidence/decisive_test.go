package evidence

import "testing"

// The outputs are what the tools print: gradlew's start script, Maven 3's error footer
// (maven-core's DefaultExceptionHandler and surefire's "No tests matching pattern"), GNU make
// under a compiler the OOM killer stopped, npm 10's footer.
func TestDecisiveLine(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"gradlew without java", `
ERROR: JAVA_HOME is not set and no 'java' command could be found in your PATH.

Please set the JAVA_HOME variable in your environment to match the
location of your Java installation.
`, "ERROR: JAVA_HOME is not set and no 'java' command could be found in your PATH."},
		{"maven, a test filter that matches nothing", `[INFO] --- surefire:3.2.5:test (default-test) @ invoice ---
[INFO] ------------------------------------------------------------------------
[INFO] BUILD FAILURE
[INFO] ------------------------------------------------------------------------
[INFO] Total time:  2.113 s
[INFO] Finished at: 2026-12-04T10:12:44Z
[INFO] ------------------------------------------------------------------------
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:3.2.5:test (default-test) on project invoice: No tests matching pattern "InvoiceServiceTests" were executed! (Set -Dsurefire.failIfNoSpecifiedTests=false to ignore this error.) -> [Help 1]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
[ERROR] Re-run Maven using the -X switch to enable full debug logging.
[ERROR] 
[ERROR] For more information about the errors and possible solutions, please read the following articles:
[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoFailureException
`, `Failed to execute goal maven-surefire-plugin:test: No tests matching pattern "InvoiceServiceTests" were executed! (Set -Dsurefire.failIfNoSpecifiedTests=false to ignore this error.)`},
		{"make, cc1plus killed", `[ 42%] Building CXX object CMakeFiles/engine.dir/src/solver.cpp.o
c++: fatal error: Killed signal terminated program cc1plus
compilation terminated.
make[2]: *** [CMakeFiles/engine.dir/build.make:76: CMakeFiles/engine.dir/src/solver.cpp.o] Error 1
make[1]: *** [CMakeFiles/Makefile2:83: CMakeFiles/engine.dir/all] Error 2
make: *** [Makefile:146: all] Error 2
`, "c++: fatal error: Killed signal terminated program cc1plus"},
		{"npm footer", `> app@1.0.0 build
> tsc -p .

sh: 1: tsc: not found
npm ERR! code 127
npm ERR! path /home/u/app
npm ERR! command failed
npm ERR! command sh -c tsc -p .

npm ERR! A complete log of this run can be found in: /home/u/.npm/_logs/2026-12-04T10_00_00_000Z-debug-0.log
`, "sh: 1: tsc: not found"},
		{"disk full", "Writing objects:  40% (2/5)\nerror: unable to write file: No space left on device\nfatal: sha1 file '.git/objects/x' write error. Out of diskspace\nexit status 128\n", "fatal: sha1 file '.git/objects/x' write error. Out of diskspace"},
		{"gradle, what went wrong", `> Task :app:compileJava UP-TO-DATE
> Task :app:test FAILED

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':app:test'.
> Process 'Gradle Test Executor 1' finished with non-zero exit value 137

* Try:
> Run with --stacktrace option to get the stack trace.
> Run with --info or --debug option to get more log output.
> Run with --scan to get full insights.
> Get more help at https://help.gradle.org.

BUILD FAILED in 41s
3 actionable tasks: 1 executed, 2 up-to-date
`, "Execution failed for task ':app:test'. > Process 'Gradle Test Executor 1' finished with non-zero exit value 137"},
		{"gradle, a dependency the repository refused", `* What went wrong:
Execution failed for task ':compileKotlin'.
> Could not resolve all files for configuration ':compileClasspath'.
   > Could not resolve com.acme.platform:acme-bom:4.12.0.
     Required by:
         root project :
      > Could not resolve com.acme.platform:acme-bom:4.12.0.
         > Could not get resource 'https://repo.acme.internal/libs/acme-bom-4.12.0.pom'.
            > Could not GET 'https://repo.acme.internal/libs/acme-bom-4.12.0.pom'. Received status code 401 from server: Unauthorized
   > Could not resolve com.acme.platform:acme-kafka-starter:2.3.1.

* Try:
> Run with --stacktrace option to get the stack trace.
`, "Execution failed for task ':compileKotlin'. > … > Could not GET 'https://repo.acme.internal/libs/acme-bom-4.12.0.pom'. Received status code 401 from server: Unauthorized"},
		{"npm 10, a package that does not exist", `npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found
npm error 404
npm error 404  'left-padd@^1.3.0' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /home/u/.npm/_logs/2026-12-04T10_00_00_000Z-debug-0.log
`, "npm error 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found"},
		{"nothing says why", "Randomized with seed 40917\n..........\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DecisiveLine(c.out); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

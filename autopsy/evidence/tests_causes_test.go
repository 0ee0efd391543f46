package evidence

import "testing"

// A runner's tally, heading or bare exception class gives way to the line that says why (each
// case names where its text was taken from; paths and names shortened).
func TestParseTestsQuotesTheCause(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{
			// ESLint's stylish formatter (eslint/lib/cli-engine/formatters/stylish.js).
			"eslint, the first error and not the tally",
			"\n/app/src/cart.js\n  3:1  warning  Unexpected console statement  no-console\n\n/app/src/index.js\n" +
				"  12:7  error  'x' is assigned a value but never used  no-unused-vars\n  14:1  error  Expected indentation of 2 spaces  indent\n\n" +
				"✖ 3 problems (2 errors, 1 warning)\n  1 error and 0 warnings potentially fixable with the `--fix` option.\n\n",
			"checks failed: /app/src/index.js:12:7: 'x' is assigned a value but never used (no-unused-vars)",
		},
		{
			// go test with cgo and no C compiler (cmd/go: `cgo: C compiler %q not found: %v`).
			"go, the compiler's line above [build failed]",
			"# runtime/cgo\ncgo: C compiler \"gcc\" not found: exec: \"gcc\": executable file not found in $PATH\nFAIL\texample.com/x [build failed]\nFAIL\n",
			`does not build: cgo: C compiler "gcc" not found: exec: "gcc": executable file not found in $PATH`,
		},
		{
			// Maven's compiler plugin, as hmsonline/cassandra-rest#8 quotes it.
			"maven, the line under COMPILATION ERROR",
			"[INFO] Compiling 21 source files to /home/u/cassandra-rest/target/classes\n" +
				"[INFO] -------------------------------------------------------------\n[ERROR] COMPILATION ERROR : \n" +
				"[INFO] -------------------------------------------------------------\n" +
				"[ERROR] /home/u/cassandra-rest/src/main/java/com/hmsonline/virgil/cli/VirgilCommand.java:[50,18] error: incompatible types\n" +
				"[INFO] 1 error\n[INFO] -------------------------------------------------------------\n" +
				"[INFO] BUILD FAILURE\n",
			"does not build: [ERROR] /home/u/cassandra-rest/src/main/java/com/hmsonline/virgil/cli/VirgilCommand.java:[50,18] error: incompatible types",
		},
		{
			// Testcontainers without a Docker daemon under Gradle: the exception as
			// testcontainers/testcontainers-java#5030 quotes it, Gradle's report of the class
			// as Netflix/maestro#29 does.
			"gradle, the exception a bare class stands for",
			"> Task :test\n\nCould not find a valid Docker environment. Please see logs and check configuration\n" +
				"java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration\n" +
				"\tat org.testcontainers.dockerclient.DockerClientProviderStrategy.lambda$getFirstValidStrategy$7(DockerClientProviderStrategy.java:277)\n" +
				"\tat java.base/java.util.Optional.orElseThrow(Optional.java:403)\n\n" +
				"OrderRepositoryTest > initializationError FAILED\n    java.lang.IllegalStateException at DockerClientProviderStrategy.java:277\n\n" +
				"1 test completed, 1 failed\n\n> Task :test FAILED\n\nFAILURE: Build failed with an exception.\n",
			"1 failed: initializationError (DockerClientProviderStrategy.java:277: java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration)",
		},
		{
			// unittest's assertEqual on strings draws a diff under the exception (its layout as
			// zio/zio#4479 quotes it).
			"unittest, the exception above the diff",
			".F.\n======================================================================\nFAIL: test_greeting (test_greet.GreetTest)\n" +
				"----------------------------------------------------------------------\nTraceback (most recent call last):\n" +
				"  File \"/home/u/proj/test_greet.py\", line 8, in test_greeting\n    self.assertEqual(greet(\"bob\"), \"Hello, Bob!\")\n" +
				"AssertionError: 'Hello, bob!' != 'Hello, Bob!'\n- Hello, bob!\n?        ^\n+ Hello, Bob!\n?        ^\n\n\n" +
				"----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n",
			"1 failed: test_greeting (/home/u/proj/test_greet.py:8: AssertionError: 'Hello, bob!' != 'Hello, Bob!')",
		},
		{
			// difflib's marker of added characters ("?   ++") ends the diff.
			"unittest, a diff that adds",
			"F\n======================================================================\nFAIL: test_title (test_fmt.FmtTest)\n" +
				"----------------------------------------------------------------------\nTraceback (most recent call last):\n" +
				"  File \"/home/u/proj/test_fmt.py\", line 5, in test_title\n    self.assertEqual(title('ab'), 'Ab!!')\n" +
				"AssertionError: 'Ab' != 'Ab!!'\n- Ab\n+ Ab!!\n?   ++\n\n\n" +
				"----------------------------------------------------------------------\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n",
			"1 failed: test_title (/home/u/proj/test_fmt.py:5: AssertionError: 'Ab' != 'Ab!!')",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseTests(c.out).Summary(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

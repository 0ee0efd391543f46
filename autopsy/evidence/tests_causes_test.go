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
		{
			// e18d/gemini-spring-testcontainers-no-docker: failsafe running a @SpringBootTest with
			// a Testcontainers database and no Docker daemon (spring-test's and testcontainers'
			// texts; the context line shortened): the innermost cause of the chain, not the outer
			// "Failed to load ApplicationContext".
			"surefire, the innermost Caused by",
			"[INFO] Running com.fernway.inventory.StockReservationIT\n" +
				"[ERROR] Tests run: 4, Failures: 0, Errors: 1, Skipped: 3, Time elapsed: 1.218 s <<< FAILURE! -- in com.fernway.inventory.StockReservationIT\n" +
				"[ERROR] com.fernway.inventory.StockReservationIT.reservesLastUnitAgainstRealDatabase -- Time elapsed: 0.007 s <<< ERROR!\n" +
				"java.lang.IllegalStateException: Failed to load ApplicationContext for [WebMergedContextConfiguration@4b5a5ed1 testClass = com.fernway.inventory.StockReservationIT, locations = [], classes = [com.fernway.inventory.InventoryApplication]]\n" +
				"\tat org.springframework.test.context.cache.DefaultCacheAwareContextLoaderDelegate.loadContext(DefaultCacheAwareContextLoaderDelegate.java:180)\n" +
				"\tat java.base/java.util.ArrayList.forEach(ArrayList.java:1596)\n" +
				"Caused by: java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration\n" +
				"\tat org.testcontainers.dockerclient.DockerClientProviderStrategy.lambda$getFirstValidStrategy$7(DockerClientProviderStrategy.java:277)\n" +
				"\t... 18 more\n\n[INFO] \n[INFO] Results:\n[INFO] \n[ERROR] Errors: \n" +
				"[ERROR]   StockReservationIT.reservesLastUnitAgainstRealDatabase » IllegalState Failed to load ApplicationContext for [WebMergedContextConfiguration@4b5a5ed1 testClass = com.fernway.inventory.StockReservationIT, ...]\n" +
				"[ERROR] Tests run: 4, Failures: 0, Errors: 1, Skipped: 3\n",
			"1 failed: reservesLastUnitAgainstRealDatabase (java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration)",
		},
		{
			// e18d/gemini-spring-context-fails-differently: a Spring context that cannot start
			// and a test run after the first failed (spring-test's DefaultCacheAwareContextLoader
			// texts, shortened): the test's own error only refers to the first failure, logged
			// for the same context above it, whose innermost cause says why.
			"surefire, the cause of the failure a repeat refers to",
			"[INFO] Running com.northwind.payments.web.PaymentControllerTest\n" +
				"2026-12-05T03:02:19.818Z ERROR 48211 --- [payments] [           main] o.s.test.context.TestContextManager      : Caught exception while allowing TestExecutionListener [org.springframework.test.context.web.ServletTestExecutionListener] to prepare test instance [com.northwind.payments.web.PaymentControllerTest@5b2c1e8a]\n\n" +
				"java.lang.IllegalStateException: Failed to load ApplicationContext for [WebMergedContextConfiguration@1d3c5e7f testClass = com.northwind.payments.web.PaymentControllerTest, locations = []]\n" +
				"\tat org.springframework.test.context.cache.DefaultCacheAwareContextLoaderDelegate.loadContext(DefaultCacheAwareContextLoaderDelegate.java:180)\n" +
				"Caused by: org.springframework.beans.factory.UnsatisfiedDependencyException: Error creating bean with name 'refundService': Unsatisfied dependency expressed through constructor parameter 0\n" +
				"\tat org.springframework.beans.factory.support.ConstructorResolver.createArgumentArray(ConstructorResolver.java:795)\n\t... 87 more\n" +
				"Caused by: org.springframework.beans.factory.NoSuchBeanDefinitionException: No qualifying bean of type 'com.northwind.payments.gateway.RefundGateway' available\n" +
				"\tat org.springframework.beans.factory.support.DefaultListableBeanFactory.raiseNoMatchingBeanFound(DefaultListableBeanFactory.java:1880)\n\t... 101 more\n\n" +
				"[ERROR] Tests run: 5, Failures: 0, Errors: 5, Skipped: 0, Time elapsed: 2.417 s <<< FAILURE! -- in com.northwind.payments.web.PaymentControllerTest\n" +
				"[ERROR] com.northwind.payments.web.PaymentControllerTest.refundReturns202 -- Time elapsed: 0.004 s <<< ERROR!\n" +
				"java.lang.IllegalStateException: ApplicationContext failure threshold (1) exceeded: skipping repeated attempt to load context for [WebMergedContextConfiguration@1d3c5e7f testClass = com.northwind.payments.web.PaymentControllerTest, ...]\n" +
				"[INFO] \n[ERROR] Tests run: 11, Failures: 0, Errors: 5, Skipped: 0\n",
			"1 failed: refundReturns202 (org.springframework.beans.factory.NoSuchBeanDefinitionException: No qualifying bean of type 'com.northwind.payments.gateway.RefundGateway' available)",
		},
		{
			// An exception without causes keeps its own message.
			"surefire, an exception with no cause",
			"[ERROR] com.acme.OrderTest.totals -- Time elapsed: 0.01 s <<< FAILURE!\n" +
				"org.opentest4j.AssertionFailedError: expected: <1800> but was: <2000>\n" +
				"\tat com.acme.OrderTest.totals(OrderTest.java:21)\n\n[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0\n",
			"1 failed: totals (OrderTest.java:21: org.opentest4j.AssertionFailedError: expected: <1800> but was: <2000>)",
		},
		{
			// e18a/codex-create-health-handler-sandbox-offline-go-sum: go build with an import
			// go.sum lacks (cmd/go's "missing go.sum entry" and its "to add:" advice): the error at
			// its place, not the command it suggests.
			"go, a missing go.sum entry and not its advice",
			"internal/health/handler.go:6:2: missing go.sum entry for module providing package github.com/go-chi/render (imported by github.com/tallyhq/ledger-api/internal/health); to add:\n" +
				"\tgo get github.com/tallyhq/ledger-api/internal/health\n",
			"does not build: internal/health/handler.go:6:2: missing go.sum entry for module providing package github.com/go-chi/render (imported by github.com/tallyhq/ledger-api/internal/health)",
		},
		{
			// e18c/claude-xdist-worker-crash-roaming: pytest -n 4 with a worker that dies
			// (pytest-xdist's dsession.py: "worker %r crashed while running %r", reported with
			// no assertion): the crash is the failure.
			"pytest-xdist, the worker that crashed",
			"4 workers [212 items]\n\n" +
				"........................................................................ [ 33%]\n" +
				"..............................................[gw2] node down: Not properly terminated\n" +
				"F\nreplacing crashed worker gw2\n" +
				"..................................................................... [100%]\n" +
				"=================================== FAILURES ===================================\n" +
				"______________________________________________________\n" +
				"[gw2] linux -- Python 3.12.4 /srv/tilekit/.venv/bin/python3.12\n" +
				"worker 'gw2' crashed while running 'tests/test_resample.py::test_bilinear_roundtrip_property'\n" +
				"- generated xml file: /srv/tilekit/build/junit.xml -\n" +
				"=========================== short test summary info ============================\n" +
				"FAILED tests/test_resample.py::test_bilinear_roundtrip_property\n" +
				"======================== 1 failed, 211 passed in 48.06s ========================\n",
			"1 failed: tests/test_resample.py::test_bilinear_roundtrip_property (tests/test_resample.py: worker 'gw2' crashed while running 'tests/test_resample.py::test_bilinear_roundtrip_property')",
		},
		{
			// e18c/codex-nbval-stale-output-then-pass: pytest --nbval on a notebook whose stored
			// output is stale (nbval's NbCellError texts): a test id with a space, a section
			// with no "E" line, its first paragraph says why.
			"nbval, the cell whose outputs differ",
			"docs/report.ipynb ..F..                                                  [100%]\n\n" +
				"=================================== FAILURES ===================================\n" +
				"_________________________ docs/report.ipynb::Cell 2 ____________________________\n" +
				"Notebook cell execution failed\nCell 2: Cell outputs differ\n\nInput:\ntotals = regional_totals(df)\ntotals\n\n" +
				"Traceback:\n mismatch 'text/plain'\n\n assert reference_output == test_output failed:\n\n" +
				"  '       revenue\\nregion         \\nnorth  1204.0' == '       revenue\\nregion         \\nnorth  1203.57'\n\n" +
				"=========================== short test summary info ============================\n" +
				"FAILED docs/report.ipynb::Cell 2\n" +
				"========================= 1 failed, 4 passed in 3.41s ==========================\n",
			"1 failed: docs/report.ipynb::Cell 2 (docs/report.ipynb: Notebook cell execution failed: Cell 2: Cell outputs differ)",
		},
		{
			// e28b/gemini-nbmake-hub-timeout-then-passes: nbmake prints IPython's traceback, no
			// "E" lines, a rule of dashes first: the exception it ends on says why.
			"nbmake, the exception the cell raised",
			"=================================== FAILURES ===================================\n" +
				"_____________________ notebooks/02_finetune_sentiment.ipynb _____________________\n" +
				"---------------------------------------------------------------------------\nds = load_dataset(\"stanfordnlp/imdb\", split=\"train[:2%]\")\n" +
				"---------------------------------------------------------------------------\nReadTimeout                               Traceback (most recent call last)\n" +
				"Cell In[3], line 1\n----> 1 ds = load_dataset(\"stanfordnlp/imdb\", split=\"train[:2%]\")\n\n" +
				"ReadTimeout: (ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. (read timeout=10)\"), '(Request ID: 3f9c)')\n" +
				"=========================== short test summary info ============================\n" +
				"FAILED notebooks/02_finetune_sentiment.ipynb::\n" +
				"========================= 1 failed, 1 passed in 48.21s =========================\n",
			"1 failed: notebooks/02_finetune_sentiment.ipynb (ReadTimeout: (ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. (read timeout=10)\"), '(Request ID: 3f9c)'))",
		},
		{
			// --tb=native prints Python's traceback with no "E" lines: a traceback is no
			// message.
			"pytest --tb=native, no message",
			"=================================== FAILURES ===================================\n" +
				"__________________________________ test_parse __________________________________\n" +
				"Traceback (most recent call last):\n  File \"/app/tests/test_p.py\", line 4, in test_parse\n    assert parse(\"1\") == 2\nAssertionError\n" +
				"=========================== short test summary info ============================\n" +
				"FAILED tests/test_p.py::test_parse\n========================= 1 failed in 0.02s ==========================\n",
			"1 failed: tests/test_p.py::test_parse (tests/test_p.py)",
		},
		{
			// e19b/claude-phoenix-ecto-ownership-then-credit-low: mix test where the code under
			// test starts a Task that queries the sandboxed repo (db_connection's OwnershipError
			// text, shortened): the assertion that fails after it only says the e-mail never came.
			"exunit, the crash logged before the failure",
			"Running ExUnit with seed: 731204, max_cases: 16\n\n.......\n\n" +
				"09:42:13.518 [error] Task #PID<0.641.0> started from #PID<0.639.0> terminating\n" +
				"** (DBConnection.OwnershipError) cannot find ownership process for #PID<0.641.0>.\n\n" +
				"When using ownership, you must manage connections in one\nof the four ways:\n\n" +
				"See Ecto.Adapters.SQL.Sandbox docs for more information.\n" +
				"    (ecto_sql 3.11.3) lib/ecto/adapters/sql.ex:1054: Ecto.Adapters.SQL.raise_sql_call_error/1\n" +
				"    (depot 0.1.0) lib/depot/orders.ex:6: anonymous fn/1 in Depot.Orders.mark_shipped/1\n" +
				"Function: #Function<0.10482577/0 in Depot.Orders.mark_shipped/1>\n    Args: []\n....\n\n" +
				"  1) test mark_shipped/1 sends the shipping e-mail (Depot.OrdersTest)\n     test/depot/orders_test.exs:38\n" +
				"     No message matching {:email, %Swoosh.Email{subject: \"Your order has shipped\"}} after 100ms.\n" +
				"     The process mailbox is empty.\n     code: assert_email_sent(subject: \"Your order has shipped\")\n" +
				"     stacktrace:\n       test/depot/orders_test.exs:44: (test)\n\n" +
				".........\nFinished in 0.9 seconds (0.6s async, 0.3s sync)\n21 tests, 1 failure\n",
			"1 failed: test mark_shipped/1 sends the shipping e-mail (test/depot/orders_test.exs:44: ** (DBConnection.OwnershipError) cannot find ownership process for #PID<0.641.0>.)",
		},
		{
			// A test that raises keeps its own exception; the crash logged before it is not its.
			"exunit, a test's own exception",
			"09:42:13.518 [error] GenServer Depot.Cache terminating\n** (RuntimeError) cache warm-up failed\n\n" +
				"  1) test total/1 sums the lines (Depot.OrdersTest)\n     test/depot/orders_test.exs:12\n" +
				"     ** (ArithmeticError) bad argument in arithmetic expression\n     stacktrace:\n       test/depot/orders_test.exs:14: (test)\n\n" +
				"3 tests, 1 failure\n",
			"1 failed: test total/1 sums the lines (test/depot/orders_test.exs:14: ** (ArithmeticError) bad argument in arithmetic expression)",
		},
		{
			// e18c/codex-mypy-strict-legacy-tree: mypy --strict (its "file:line: error: message
			// [code]" lines): a type checker rejected the code, which builds.
			"mypy, a check and not a build",
			"src/reports/_compat.py:4: error: Library stubs not installed for \"dateutil\"  [import-untyped]\n" +
				"src/reports/_compat.py:4: note: Hint: \"python3 -m pip install types-python-dateutil\"\n" +
				"src/reports/_compat.py:18: error: Function is missing a type annotation  [no-untyped-def]\n" +
				"Found 214 errors in 19 files (checked 47 source files)\n",
			"checks failed: src/reports/_compat.py:4: error: Library stubs not installed for \"dateutil\"  [import-untyped]",
		},
		{
			// mypy's report of a file it cannot parse: that code does not build.
			"mypy, a syntax error",
			"src/etl/normalize.py:7: error: invalid syntax  [syntax]\nFound 1 error in 1 file (errors prevented further checking)\n",
			"does not build: src/etl/normalize.py:7: error: invalid syntax  [syntax]",
		},
		{
			// e19b/codex-credo-new-issue-every-attempt: mix credo --strict (rrrene/credo's
			// output): the issue with the place Credo prints under it.
			"credo, the issue and its place",
			"Checking 38 source files ...\n\n  Code Readability\n┃ \n┃ [R] ↗ Modules should have a @moduledoc tag.\n" +
				"┃       lib/hooky/backoff.ex:1:11 #(Hooky.Backoff)\n\nPlease report incorrect results: https://github.com/rrrene/credo/issues\n\n" +
				"187 mods/funs, found 1 code readability issue.\n\n" +
				"Showing priority issues: ↑ ↗ →  (use `mix credo explain` to explain issues, `mix credo --help` for options).\n",
			"checks failed: lib/hooky/backoff.ex:1:11: Modules should have a @moduledoc tag.",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseTests(c.out).Summary(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// e19d/gemini-go-retry-task-then-proxy-dns: go test with an empty module cache and DNS failing
// (cmd/go's errors at the imports it could not download): the network failed, not the code's
// build; the line keeps its innermost cause.
func TestParseTestsModuleFetchIsNoBuild(t *testing.T) {
	out := "go: downloading github.com/go-chi/chi/v5 v5.1.0\n" +
		"internal/api/server.go:8:2: github.com/go-chi/chi/v5@v5.1.0: Get \"https://proxy.golang.org/github.com/go-chi/chi/v5/@v/v5.1.0.zip\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: server misbehaving\n" +
		"internal/api/health_test.go:9:2: github.com/stretchr/testify@v1.9.0: Get \"https://proxy.golang.org/github.com/stretchr/testify/@v/v1.9.0.zip\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: server misbehaving\n"
	if got := ParseTests(out).Summary(); got != "" {
		t.Errorf("summary %q, want none", got)
	}
	want := "internal/api/health_test.go:9:2: …: Get \"https://proxy.golang.org/github.com/stretchr/testify/@v/v1.9.0.zip\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: server misbehaving"
	if got := DecisiveLine(out); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A compile error at a place stays one.
	if got := ParseTests("internal/api/server.go:12:9: undefined: chi.NewMux\n").Summary(); got != "does not build: internal/api/server.go:12:9: undefined: chi.NewMux" {
		t.Errorf("compile error: %q", got)
	}
}

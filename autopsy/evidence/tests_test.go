package evidence

import (
	"fmt"
	"strings"
	"testing"
)

// Samples of what the runners print. Where a sample is quoted from a public thread its source is
// named; the others are what the runner's own source prints (its format strings), with names made
// up.
var runnerSamples = []runnerSample{
	{"go text, a subtest and a plain test", `=== RUN   TestParse
=== RUN   TestParse/empty
    parse_test.go:21: got "x", want ""
--- FAIL: TestParse (0.00s)
    --- FAIL: TestParse/empty (0.00s)
--- FAIL: TestEmit (0.01s)
    emit_test.go:30: mismatch
FAIL
FAIL	example.com/p	0.004s
ok  	example.com/q	0.003s
FAIL
`, []string{`example.com/p TestParse/empty @ parse_test.go:21 : got "x"`, `example.com/p TestEmit @ emit_test.go:30 : mismatch`}, -1, -1},
	// go test's panic output (src/testing/testing.go tRunner): the panic follows --- FAIL.
	{"go text, a panic", `--- FAIL: TestIndex (0.00s)
panic: runtime error: index out of range [3] with length 3 [recovered]
	panic: runtime error: index out of range [3] with length 3

goroutine 7 [running]:
testing.tRunner.func1.2({0x5a1c20, 0xc000016120})
	/usr/local/go/src/testing/testing.go:1632 +0x230
example.com/p.TestIndex(0xc0000a8b60)
	/home/u/p/index_test.go:9 +0x1d
FAIL	example.com/p	0.005s
`, []string{`example.com/p TestIndex @ /home/u/p/index_test.go:9 : panic: runtime error: index out of range`}, -1, -1},
	// go test -timeout: src/testing/testing.go (*M).startAlarm.
	{"go text, the test binary timed out", `panic: test timed out after 2m0s
	running tests:
		TestSlowSync (2m0s)

goroutine 33 [running]:
FAIL	example.com/sync	120.014s
`, []string{`example.com/sync TestSlowSync : still running at the timeout`}, -1, -1},
	{"go -json", `{"Time":"2026-12-01T10:00:00Z","Action":"run","Package":"example.com/p","Test":"TestEmit"}
{"Time":"2026-12-01T10:00:00Z","Action":"output","Package":"example.com/p","Test":"TestEmit","Output":"=== RUN   TestEmit\n"}
{"Time":"2026-12-01T10:00:00Z","Action":"output","Package":"example.com/p","Test":"TestEmit","Output":"    emit_test.go:30: mismatch\n"}
{"Time":"2026-12-01T10:00:00Z","Action":"output","Package":"example.com/p","Test":"TestEmit","Output":"--- FAIL: TestEmit (0.00s)\n"}
{"Time":"2026-12-01T10:00:00Z","Action":"fail","Package":"example.com/p","Test":"TestEmit","Elapsed":0}
{"Time":"2026-12-01T10:00:00Z","Action":"output","Package":"example.com/p","Output":"FAIL\n"}
{"Time":"2026-12-01T10:00:00Z","Action":"output","Package":"example.com/p","Output":"FAIL\texample.com/p\t0.004s\n"}
{"Time":"2026-12-01T10:00:00Z","Action":"fail","Package":"example.com/p","Elapsed":0.004}
`, []string{`example.com/p TestEmit @ emit_test.go:30 : mismatch`}, -1, -1},
	// go test -race: the race detector's report (runtime/race, tsan's report format) and testing's
	// "race detected during execution of test".
	{"go text, a data race", `=== RUN   TestCacheConcurrent
==================
WARNING: DATA RACE
Write at 0x00c0000b4030 by goroutine 9:
  runtime.mapassign_faststr()
      /usr/local/go/src/runtime/map_faststr.go:203 +0x0
  example.com/app/cache.(*Cache).Set()
      /home/u/app/cache/cache.go:41 +0x64
  example.com/app/cache.TestCacheConcurrent.func1()
      /home/u/app/cache/cache_test.go:22 +0x44

Previous read at 0x00c0000b4030 by goroutine 8:
  runtime.mapaccess1_faststr()
      /usr/local/go/src/runtime/map_faststr.go:13 +0x0
  example.com/app/cache.(*Cache).Get()
      /home/u/app/cache/cache.go:33 +0x50

Goroutine 9 (running) created at:
  example.com/app/cache.TestCacheConcurrent()
      /home/u/app/cache/cache_test.go:20 +0x8c
==================
    testing.go:1398: race detected during execution of test
--- FAIL: TestCacheConcurrent (0.01s)
FAIL
FAIL	example.com/app/cache	0.031s
`, []string{`example.com/app/cache TestCacheConcurrent @ cache.go:41 : data race: write in cache.(*Cache).Set`}, -1, -1},
	// testify's assertion block (assert/assertions.go Fail: labelled lines after a tab).
	{"go text, testify", "=== RUN   TestFetchTimeout\n    fetcher_test.go:72: \n        \tError Trace:\t/home/u/app/fetcher_test.go:72\n" +
		"        \tError:      \tReceived unexpected error:\n        \t            \tcontext deadline exceeded\n" +
		"        \tTest:       \tTestFetchTimeout\n--- FAIL: TestFetchTimeout (2.00s)\n" +
		"=== RUN   TestTotal\n    total_test.go:18: \n        \tError Trace:\t/home/u/app/total_test.go:18\n" +
		"        \tError:      \tNot equal: \n        \t            \texpected: 3\n        \t            \tactual  : 4\n" +
		"        \tTest:       \tTestTotal\n--- FAIL: TestTotal (0.00s)\nFAIL\nFAIL\texample.com/app\t2.013s\n",
		[]string{`example.com/app TestFetchTimeout @ fetcher_test.go:72 : Received unexpected error: context deadline exceeded`,
			`example.com/app TestTotal @ total_test.go:18 : Not equal: expected: 3 actual : 4`}, -1, -1},
	// pytest's short test summary and failure sections (_pytest/terminal.py).
	{"pytest", `============================= test session starts ==============================
collected 3 items

tests/test_api.py .F.                                                    [100%]

=================================== FAILURES ===================================
_________________________________ test_create __________________________________

    def test_create():
>       assert create("x") == 201
E       assert 500 == 201
E        +  where 500 = create('x')

tests/test_api.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_api.py::test_create - assert 500 == 201
========================= 1 failed, 2 passed in 0.12s =========================
`, []string{`tests/test_api.py tests/test_api.py::test_create @ tests/test_api.py:14 : assert 500 == 201`}, 2, 3},
	{"pytest, a collection error", `==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_models.py _____________________
ImportError while importing test module '/src/tests/test_models.py'.
E   ModuleNotFoundError: No module named 'pydantic'
=========================== short test summary info ============================
ERROR tests/test_models.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.31s ===============================
`, nil, 0, 1},
	// jest's default reporter.
	{"jest", ` FAIL  src/sum.test.js
  ● sum › adds 1 + 2 to equal 3

    expect(received).toBe(expected) // Object.is equality

    Expected: 3
    Received: 4

      3 | describe('sum', () => {
      4 |   test('adds 1 + 2 to equal 3', () => {
    > 5 |     expect(sum(1, 2)).toBe(3);
        |                       ^
      6 |   });

      at Object.toBe (src/sum.test.js:5:23)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 2 passed, 3 total
`, []string{`src/sum.test.js sum › adds 1 + 2 to equal 3 @ src/sum.test.js:5 : expect(received).toBe(expected): expected 3, received 4`}, 2, 3},
	// jest with several suites: @jest/reporters' SummaryReporter repeats each failure under
	// "Summary of all failing tests".
	{"jest, the summary of all failing tests", ` PASS  src/ws/backoff.test.ts
 FAIL  src/ws/heartbeat.test.ts (5.214 s)
  ● Heartbeat › closes the socket after two missed pongs

    expect(received).toBe(expected) // Object.is equality

    Expected: 3
    Received: 1

      40 |     jest.advanceTimersByTime(61_000);
    > 41 |     expect(socket.readyState).toBe(WebSocket.CLOSED);
         |                               ^

      at Object.<anonymous> (src/ws/heartbeat.test.ts:41:31)

 PASS  src/ws/reconnect.test.ts
Summary of all failing tests
 FAIL  src/ws/heartbeat.test.ts (5.214 s)
  ● Heartbeat › closes the socket after two missed pongs

    expect(received).toBe(expected) // Object.is equality

    Expected: 3
    Received: 1

      at Object.<anonymous> (src/ws/heartbeat.test.ts:41:31)


Test Suites: 1 failed, 2 passed, 3 total
Tests:       1 failed, 41 passed, 42 total
`, []string{`src/ws/heartbeat.test.ts Heartbeat › closes the socket after two missed pongs @ src/ws/heartbeat.test.ts:41 : expect(received).toBe(expected): expected 3, received 1`}, 41, 42},
	// vitest's default reporter.
	{"vitest", ` ❯ src/sum.test.ts (2 tests | 1 failed) 4ms
   × sum > adds 2ms
     → expected 4 to be 3 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/sum.test.ts > sum > adds
AssertionError: expected 4 to be 3 // Object.is equality

- Expected
+ Received

- 3
+ 4

 ❯ src/sum.test.ts:6:22
      4|   it('adds', () => {
      5|     expect(sum(1, 2)).toBe(3)

 Test Files  1 failed (1)
      Tests  1 failed | 1 passed (2)
`, []string{`src/sum.test.ts sum > adds @ src/sum.test.ts:6 : AssertionError: expected 4 to be 3`}, 1, 2},
	// cargo test, Rust 1.73 and later (std's panic message on its own line).
	{"cargo", `running 2 tests
test tests::adds ... ok
test tests::parses ... FAILED

failures:

---- tests::parses stdout ----
thread 'tests::parses' panicked at src/lib.rs:42:9:
assertion ` + "`left == right`" + ` failed
  left: 4
 right: 5
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace


failures:
    tests::parses

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass ` + "`--lib`" + `
`, []string{"tests::parses @ src/lib.rs:42 : assertion `left == right` failed"}, 1, 2},
	{"cargo, before Rust 1.73", `test it_works ... FAILED
---- it_works stdout ----
thread 'it_works' panicked at 'assertion failed: ` + "`(left == right)`" + `', src/main.rs:10:5
`, []string{"it_works @ src/main.rs:10 : assertion failed: `(left == right)`"}, -1, -1},
	// Maven Surefire 3: OWASP-Benchmark/BenchmarkUtils#83.
	{"surefire 3", `[INFO] Running org.owasp.benchmarkutils.score.report.html.VulnerabilityStatsTableTest
[ERROR] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.05 s <<< FAILURE! -- in org.owasp.benchmarkutils.score.report.html.VulnerabilityStatsTableTest
[ERROR] org.owasp.benchmarkutils.score.report.html.VulnerabilityStatsTableTest.showsSuccessColumns -- Time elapsed: 0.003 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <true> but was: <false>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at org.junit.jupiter.api.Assertions.assertTrue(Assertions.java:183)
	at org.owasp.benchmarkutils.score.report.html.VulnerabilityStatsTableTest.showsSuccessColumns(VulnerabilityStatsTableTest.java:154)
	at java.base/java.lang.reflect.Method.invoke(Method.java:566)

[INFO] Results:
[INFO]
[ERROR] Failures: 
[ERROR]   VulnerabilityStatsTableTest.showsSuccessColumns:154 expected: <true> but was: <false>
[INFO]
[ERROR] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0
`, []string{`org.owasp.benchmarkutils.score.report.html.VulnerabilityStatsTableTest showsSuccessColumns @ VulnerabilityStatsTableTest.java:154 : org.opentest4j.AssertionFailedError: expected: <true> but was: <false>`}, 3, 4},
	{"surefire 2", `[ERROR] testAdd(com.example.CalcTest)  Time elapsed: 0.012 s  <<< FAILURE!
java.lang.AssertionError: expected:<3> but was:<4>
	at org.junit.Assert.fail(Assert.java:88)
	at com.example.CalcTest.testAdd(CalcTest.java:15)
`, []string{`com.example.CalcTest testAdd @ CalcTest.java:15 : java.lang.AssertionError: expected:<3> but was:<4>`}, -1, -1},
	// Gradle's test logging (TestExceptionFormat.SHORT, the default).
	{"gradle", `> Task :app:test FAILED

AppTest > appHasAGreeting() FAILED
    org.opentest4j.AssertionFailedError at AppTest.java:12

2 tests completed, 1 failed

FAILURE: Build failed with an exception.
`, []string{`AppTest appHasAGreeting() @ AppTest.java:12 : org.opentest4j.AssertionFailedError`}, 1, 2},
	// RSpec's "Failed examples" list.
	{"rspec", `Failures:

  1) User validates the email
     Failure/Error: expect(user).to be_valid
       expected #<User id: nil> to be valid, but got errors: Email is invalid
     # ./spec/models/user_spec.rb:12:in 'block (2 levels) in <top (required)>'

Finished in 0.21 seconds (files took 1.2 seconds to load)
9 examples, 1 failure

Failed examples:

rspec ./spec/models/user_spec.rb:10 # User validates the email
`, []string{`spec/models/user_spec.rb User validates the email @ spec/models/user_spec.rb:10 : `}, -1, -1},
	// python -m unittest.
	{"unittest", `F.
======================================================================
FAIL: test_total (tests.test_cart.CartTest.test_total)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/src/shop/tests/test_cart.py", line 9, in test_total
    self.assertEqual(total([1, 2]), 4)
AssertionError: 3 != 4

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)
`, []string{`tests.test_cart.CartTest.test_total test_total @ /src/shop/tests/test_cart.py:9 : AssertionError: 3 != 4`}, -1, -1},
	// mocha's spec reporter.
	{"mocha", `  2 passing (12ms)
  1 failing

  1) slug
       strips accents:

      AssertionError [ERR_ASSERTION]: 'nicode' == 'unicode'
      + expected - actual

      at Context.<anonymous> (test/slug.test.js:8:12)
      at process.processImmediate (node:internal/timers:483:21)
`, []string{`slug strips accents @ test/slug.test.js:8 : AssertionError [ERR_ASSERTION]: 'nicode' == 'unicode'`}, -1, -1},
	// PHPUnit's failure list.
	{"phpunit", `There was 1 failure:

1) Tests\Unit\UserTest::testEmailIsValidated
Failed asserting that false is true.

/src/app/tests/Unit/UserTest.php:21

FAILURES!
Tests: 14, Assertions: 30, Failures: 1.
`, []string{`Tests\Unit\UserTest testEmailIsValidated @ /src/app/tests/Unit/UserTest.php:21 : Failed asserting that false is true.`}, -1, -1},
	// dotnet test's console logger.
	{"dotnet", `  Failed Shop.Tests.CartTests.TotalAddsTax [4 ms]
  Error Message:
   Assert.Equal() Failure: Values differ
Expected: 10.5
Actual:   10
  Stack Trace:
     at Shop.Tests.CartTests.TotalAddsTax() in /src/Shop.Tests/CartTests.cs:line 17

Failed!  - Failed:     1, Passed:    22, Skipped:     0, Total:    23
`, []string{`Shop.Tests.CartTests TotalAddsTax @ /src/Shop.Tests/CartTests.cs:17 : Assert.Equal() Failure: Values differ`}, -1, -1},
	// Playwright's list reporter.
	{"playwright", `  1) [chromium] › tests/login.spec.ts:12:5 › login › redirects to the dashboard ─────────

    Error: expect(page).toHaveURL(expected) failed

  1 failed
`, []string{`tests/login.spec.ts login › redirects to the dashboard @ tests/login.spec.ts:12 : Error: expect(page).toHaveURL(expected) failed`}, -1, -1},
	// Rails' minitest reporter (minitest/minitest#737 layout) and plain minitest's numbered one.
	{"minitest", `Run options: --seed 48213

# Running:

..............F

Failure:
InvoiceTest#test_late_fee_compounds_monthly [test/models/invoice_test.rb:22]:
Expected: 121.55
  Actual: 121.0


bin/rails test test/models/invoice_test.rb:17

  1) Error:
Billing::LedgerTest#test_posts_twice:
NoMethodError: undefined method 'post' for nil

38 runs, 71 assertions, 1 failures, 1 errors, 0 skips
`, []string{`test/models/invoice_test.rb test_late_fee_compounds_monthly @ test/models/invoice_test.rb:22 : Expected: 121.55 Actual: 121.0`,
		`Billing::LedgerTest test_posts_twice : NoMethodError: undefined method 'post' for nil`}, -1, -1},
	// Laravel's `artisan test` (Collision).
	{"laravel artisan test", `   FAIL  Tests\Feature\InvoiceExportTest
  ⨯ it exports paid invoices as csv                                      0.09s
  ────────────────────────────────────────────────────────────────────────────
   FAILED  Tests\Feature\InvoiceExportTest > it exports paid invoices as csv   QueryException
  could not find driver (Connection: sqlite, SQL: PRAGMA foreign_keys = ON;)

  at vendor/laravel/framework/src/Illuminate/Database/Connection.php:825
`, []string{`Tests\Feature\InvoiceExportTest it exports paid invoices as csv : QueryException: could not find driver (Connection: sqlite`}, -1, -1},
	// mix test (ExUnit.CLIFormatter; the failure as Mix.Tasks.Test's documentation shows it,
	// v1.16): the note with left and right, the test's own frame is the line that failed.
	{"exunit, an assertion", `Running ExUnit with seed: 646219, max_cases: 16
...

  1) test greets the world (FooTest)
     test/foo_test.exs:5
     Assertion with == failed
     code:  assert Foo.hello() == :world!
     left:  :world
     right: :world!
     stacktrace:
       test/foo_test.exs:6: (test)

........

Finished in 0.05 seconds (0.00s async, 0.05s sync)
1 doctest, 11 tests, 1 failure
`, []string{`FooTest test greets the world @ test/foo_test.exs:6 : Assertion with == failed (left: :world, right: :world!)`}, 11, 12},
	// An exception in a test's setup (etalab/transport-site#2539): the message is the raise,
	// the place the test's, as no frame is the test's own.
	{"exunit, an exception", `.......
 10) test GTFSRTEntitiesJob removes data over 7 days old (Transport.Test.Transport.Jobs.GTFSRTEntitiesJobTest)
     test/transport/jobs/gtfs_rt_entities_test.exs:70
     ** (DBConnection.ConnectionError) connection not available and request was dropped from queue after 366ms. This means requests are coming in and your connection pool cannot serve them fast enough. You can address this by:
     
       1. Ensuring your database is available and that you can connect to it
       2. Tracking down slow queries and making sure they are running fast enough
     
     See DBConnection.start_link/2 for more information
     
     stacktrace:
       (db_connection 2.4.2) lib/db_connection/ownership.ex:96: DBConnection.Ownership.ownership_checkout/2
       (ecto_sql 3.8.2) lib/ecto/adapters/sql/sandbox.ex:499: Ecto.Adapters.SQL.Sandbox.checkout/2
       test/transport/jobs/gtfs_rt_entities_test.exs:16: Transport.Test.Transport.Jobs.GTFSRTEntitiesJobTest.__ex_unit_setup_1/1

Finished in 14.2 seconds (9.8s async, 4.4s sync)
10 tests, 2 failures, 1 excluded
`, []string{`Transport.Test.Transport.Jobs.GTFSRTEntitiesJobTest test GTFSRTEntitiesJob removes data over 7 days old @ test/transport/jobs/gtfs_rt_entities_test.exs:70 : ** (DBConnection.ConnectionError) connection not available and request was dropped`}, 7, 9},
	// hspec 2 under cabal test (its report as in egonSchiele/dominion#10 and fpco/inline-c#61).
	{"hspec", `Rota.Schedule
  assignShifts
    covers every shift [✔]
    never assigns two night shifts in a row [✘]

Failures:

  test/Rota/ScheduleSpec.hs:41:7: 
  1) Rota.Schedule.assignShifts never assigns two night shifts in a row
       expected: []
        but got: [("ines",Night,2026-03-03),("ines",Night,2026-03-04)]

  To rerun use: --match "/Rota.Schedule/assignShifts/never assigns two night shifts in a row/"

Randomized with seed 1185472210

Finished in 0.0213 seconds
9 examples, 1 failure
Test suite rota-test: FAIL
`, []string{`test/Rota/ScheduleSpec.hs Rota.Schedule.assignShifts never assigns two night shifts in a row @ test/Rota/ScheduleSpec.hs:41 : expected: [] but got: [("ines",Night`}, 8, 9},
	// deno test's ERRORS and FAILURES (its report as in denoland/deno#5417 and #6658).
	{"deno test", `running 4 tests from ./src/static_test.ts
serves index.html for directories ... ok (4ms)
sets a weak ETag ... FAILED (3ms)
returns 404 for missing files ... ok (1ms)

 ERRORS 

sets a weak ETag => ./src/static_test.ts:22:6
error: AssertionError: Values are not equal.


    [Diff] Actual / Expected


-   W/"5-1733357312000"
+   W/"5-1733357312"

    at assertEquals (https://jsr.io/@std/assert/1.0.8/equals.ts:64:9)
    at file:///src/tinyhttp/src/static_test.ts:30:3

 FAILURES 

sets a weak ETag => ./src/static_test.ts:22:6

FAILED | 2 passed | 1 failed (118ms)
`, []string{`src/static_test.ts sets a weak ETag @ src/static_test.ts:22 : AssertionError: Values are not equal.`}, 2, 3},
	// lein test (clojure.test's report: "FAIL in (name) (file:line)", expected and actual).
	{"lein test", `lein test billing.customer-test

lein test billing.invoice-test

FAIL in (test-tax-lines-quebec) (invoice_test.clj:42)
QST is charged on the pre-tax amount
expected: (= 9.98M (:amount (qst 100.00M)))
  actual: (not (= 9.98M 9.975M))

lein test billing.payments-test

Ran 38 tests containing 112 assertions.
1 failures, 0 errors.
Tests failed.
`, []string{`billing.invoice-test test-tax-lines-quebec @ invoice_test.clj:42 : QST is charged on the pre-tax amount expected: (= 9.98M (:amount (qst 100.00M))) actual: (not (= 9.98M 9.975M))`}, 37, 38},
	{"nothing a runner printed", "make: *** [Makefile:4: test] Error 1\n", nil, -1, -1},
}

type runnerSample struct {
	name, out string
	want      []string // Key() @ Where() : Message prefix
	passed    int
	total     int
}

func TestParseTests(t *testing.T) {
	for _, s := range append(runnerSamples, nativeSamples...) {
		t.Run(s.name, func(t *testing.T) {
			r := ParseTests(s.out)
			var got []string
			for _, f := range r.Failed {
				g := f.Key()
				if w := f.Where(); w != "" {
					g += " @ " + w
				}
				got = append(got, g+" : "+f.Message)
			}
			if len(got) != len(s.want) {
				t.Fatalf("failed tests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(s.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], s.want[i]) {
					t.Errorf("test %d:\n got %s\nwant %s…", i, got[i], s.want[i])
				}
			}
			if r.Passed != s.passed || r.Total != s.total {
				t.Errorf("counts %d/%d, want %d/%d", r.Passed, r.Total, s.passed, s.total)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	r := ParseTests(runnerSamples[0].out)
	if got, want := r.Summary(), `2 failed: TestParse/empty (parse_test.go:21: got "x", want ""), TestEmit (emit_test.go:30: mismatch)`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	b := ParseTests("# example.com/p\n./parse.go:41:2: syntax error: unexpected }, expected expression\nFAIL\texample.com/p [build failed]\n")
	if got := b.Summary(); got != "does not build: ./parse.go:41:2: syntax error: unexpected }, expected expression" {
		t.Errorf("build summary %q", got)
	}
	if ParseTests("ok  \texample.com/p\t0.1s\n").Summary() != "" {
		t.Error("a passing run has a summary")
	}
}

func FuzzParseTests(f *testing.F) {
	for _, s := range append(runnerSamples, nativeSamples...) {
		f.Add(s.out)
	}
	f.Fuzz(func(t *testing.T, out string) {
		r := ParseTests(out)
		for _, x := range append(r.Failed, r.Suites...) {
			if x.Name == "" || x.Line < 0 || len(x.Message) > maxLine+len("…") {
				t.Fatalf("bad test %+v", x)
			}
		}
		_ = fmt.Sprint(r.Summary(), r.Keys())
	})
}

func TestChecks(t *testing.T) {
	if f := ParseTests("src/a.py:3:1: F401 'os' imported but unused\n"); len(f.Checks) != 1 {
		t.Errorf("flake8: %+v", f)
	}
	// rrrene/credo's and rubocop's own report lines.
	for _, l := range []string{"┃ [R] ↗ Modules should have a @moduledoc tag.", "app/models/user.rb:3:5: C: Style/GuardClause: Use a guard clause."} {
		if f := ParseTests(l + "\n"); len(f.Checks) != 1 {
			t.Errorf("%q: %+v", l, f)
		}
	}
	r := ParseTests("black....Failed\n- hook id: black\n- files were modified by this hook\n\nreformatted src/a.py\n")
	if len(r.Checks) == 0 || len(r.Build) != 0 || !strings.HasPrefix(r.Summary(), "checks failed: ") {
		t.Errorf("%+v %q", r, r.Summary())
	}
}

// A doctest's name has spaces ("src/lib.rs - parse (line 12)"): it is still a failing test.
func TestCargoDoctestName(t *testing.T) {
	out := "   Doc-tests tinycfg\n\nrunning 2 tests\ntest src/lib.rs - (line 18) ... FAILED\ntest src/lib.rs - (line 7) ... ok\n\nfailures:\n\n---- src/lib.rs - (line 18) stdout ----\nerror[E0432]: unresolved import `serde`\n\nfailures:\n    src/lib.rs - (line 18)\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored\n"
	got := ParseTests(out)
	if len(got.Failed) != 1 || got.Failed[0].Name != "src/lib.rs - (line 18)" {
		t.Fatalf("failed tests %+v, want the doctest src/lib.rs - (line 18)", got.Failed)
	}
}

// jest's "Test suite failed to run" is a file that did not load (here ts-jest's diagnostic, as
// in feredean/node-api-starter#12): a suite by its file with the error, not a failing test (a
// test named "Test suite failed to run" would later read as a flaky test once the file loads).
func TestJestSuiteFailedToRun(t *testing.T) {
	out := ` PASS  src/money/round.test.ts
 FAIL  src/invoice/invoice.test.ts
  ● Test suite failed to run

    src/invoice/format.ts:14:33 - error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.

    14     return formatAmount(total.toFixed(2), currency);
                                       ~~~~~~~~~~~~~~~~

 FAIL  src/invoice/totals.test.ts
  ● totals › sums the lines

    expect(received).toBe(expected) // Object.is equality

      at Object.<anonymous> (src/invoice/totals.test.ts:9:20)

Test Suites: 2 failed, 1 passed, 3 total
Tests:       1 failed, 12 passed, 13 total
`
	r := ParseTests(out)
	if len(r.Failed) != 1 || r.Failed[0].Name != "totals › sums the lines" {
		t.Errorf("failed tests %+v, want totals › sums the lines alone", r.Failed)
	}
	if len(r.Suites) != 1 || r.Suites[0].Name != "src/invoice/invoice.test.ts" || r.Suites[0].Where() != "src/invoice/format.ts:14" {
		t.Fatalf("suites %+v, want src/invoice/invoice.test.ts at src/invoice/format.ts:14", r.Suites)
	}
	want := "1 failed: totals › sums the lines (src/invoice/totals.test.ts:9: expect(received).toBe(expected) // Object.is equality); " +
		"1 suite failed to run: src/invoice/invoice.test.ts (src/invoice/format.ts:14: TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.)"
	if got := r.Summary(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
	if got := ParseTests(" FAIL  src/crypto.test.js\n  ● Test suite failed to run\n\n    ReferenceError: TextEncoder is not defined\n").Summary(); got != "1 suite failed to run: src/crypto.test.js (ReferenceError: TextEncoder is not defined)" {
		t.Errorf("summary %q", got)
	}
}

// jest's matcher line says which matcher failed; the Expected/Received lines under it say what
// (expect's printDiffOrStringify, a string value in quotes).
func TestJestExpectedReceived(t *testing.T) {
	out := ` FAIL  src/invoice/format.test.ts
  ● formatAmount › formats euros the German way

    expect(received).toBe(expected) // Object.is equality

    Expected: "1.234,50 €"
    Received: "1234.50 EUR"

      12 |   it("formats euros the German way", () => {
    > 13 |     expect(formatAmount(1234.5, "EUR", "de-DE")).toBe("1.234,50 €");
         |                                                  ^

      at Object.<anonymous> (src/invoice/format.test.ts:13:50)
`
	r := ParseTests(out)
	want := "1 failed: formatAmount › formats euros the German way (src/invoice/format.test.ts:13: expect(received).toBe(expected): expected \"1.234,50 €\", received \"1234.50 EUR\")"
	if got := r.Summary(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
}

// pytest's collection error (_pytest/terminal.py, pytest 8): the file did not import, pytest
// stopped the session and no test ran; not "1 failed: tests/test_invoice.py".
func TestPytestCollectionError(t *testing.T) {
	out := `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.3, pluggy-1.5.0
rootdir: /home/u/app
collected 14 items / 1 error

==================================== ERRORS ====================================
___________________ ERROR collecting tests/test_invoice.py ____________________
ImportError while importing test module '/home/u/app/tests/test_invoice.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.12/importlib/__init__.py:90: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_invoice.py:3: in <module>
    from freezegun import freeze_time
E   ModuleNotFoundError: No module named 'freezegun'
=========================== short test summary info ============================
ERROR tests/test_invoice.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.31s ===============================
`
	r := ParseTests(out)
	if len(r.Failed) != 0 || len(r.Suites) != 1 {
		t.Fatalf("failed %+v, suites %+v: want one file that failed to collect", r.Failed, r.Suites)
	}
	want := "1 collection error (no test ran): tests/test_invoice.py (tests/test_invoice.py:3: ModuleNotFoundError: No module named 'freezegun')"
	if got := r.Summary(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
}

// go1.26's race detector on a map written from two goroutines (go test -race, captured): the
// runtime's frame is in internal/runtime/maps, the race is in (*Cache).Set.
func TestGoRaceReal(t *testing.T) {
	out := `==================
WARNING: DATA RACE
Write at 0x00c00009af60 by goroutine 8:
  runtime.mapassign_faststr()
      /usr/local/go/src/internal/runtime/maps/runtime_faststr.go:263 +0x0
  example.com/app/cache.(*Cache).Set()
      /home/u/app/cache/cache.go:9 +0xb0
  example.com/app/cache.TestCacheConcurrent.func1()
      /home/u/app/cache/cache_test.go:13 +0x17

Previous write at 0x00c00009af60 by goroutine 9:
  runtime.mapassign_faststr()
      /usr/local/go/src/internal/runtime/maps/runtime_faststr.go:263 +0x0
  example.com/app/cache.(*Cache).Set()
      /home/u/app/cache/cache.go:9 +0xb0
  example.com/app/cache.TestCacheConcurrent.func1()
      /home/u/app/cache/cache_test.go:13 +0x17

Goroutine 8 (running) created at:
  example.com/app/cache.TestCacheConcurrent()
      /home/u/app/cache/cache_test.go:13 +0xcf
  testing.tRunner()
      /usr/local/go/src/testing/testing.go:2036 +0x21c
  testing.(*T).Run.gowrap1()
      /usr/local/go/src/testing/testing.go:2101 +0x38

Goroutine 9 (finished) created at:
  example.com/app/cache.TestCacheConcurrent()
      /home/u/app/cache/cache_test.go:13 +0xcf
  testing.tRunner()
      /usr/local/go/src/testing/testing.go:2036 +0x21c
  testing.(*T).Run.gowrap1()
      /usr/local/go/src/testing/testing.go:2101 +0x38
==================
==================
WARNING: DATA RACE
Write at 0x00c0000aa428 by goroutine 8:
  example.com/app/cache.(*Cache).Set()
      /home/u/app/cache/cache.go:9 +0xbc
  example.com/app/cache.TestCacheConcurrent.func1()
      /home/u/app/cache/cache_test.go:13 +0x17

Previous write at 0x00c0000aa428 by goroutine 9:
  example.com/app/cache.(*Cache).Set()
      /home/u/app/cache/cache.go:9 +0xbc
  example.com/app/cache.TestCacheConcurrent.func1()
      /home/u/app/cache/cache_test.go:13 +0x17

Goroutine 8 (running) created at:
  example.com/app/cache.TestCacheConcurrent()
      /home/u/app/cache/cache_test.go:13 +0xcf
  testing.tRunner()
      /usr/local/go/src/testing/testing.go:2036 +0x21c
  testing.(*T).Run.gowrap1()
      /usr/local/go/src/testing/testing.go:2101 +0x38

Goroutine 9 (finished) created at:
  example.com/app/cache.TestCacheConcurrent()
      /home/u/app/cache/cache_test.go:13 +0xcf
  testing.tRunner()
      /usr/local/go/src/testing/testing.go:2036 +0x21c
  testing.(*T).Run.gowrap1()
      /usr/local/go/src/testing/testing.go:2101 +0x38
==================
--- FAIL: TestCacheConcurrent (0.00s)
    testing.go:1712: race detected during execution of test
FAIL
FAIL	example.com/app/cache	0.014s
FAIL
`
	r := ParseTests(out)
	if len(r.Failed) != 1 || r.Failed[0].Where() != "cache.go:9" || r.Failed[0].Message != "data race: write in cache.(*Cache).Set" {
		t.Fatalf("failed %+v, want TestCacheConcurrent at cache.go:9: data race: write in cache.(*Cache).Set", r.Failed)
	}
}

// vitest lists the files it could not run under "Failed Suites", those that failed the same way
// together, then the error once (vitest 2's default reporter; the error is Prisma's).
func TestVitestFailedSuites(t *testing.T) {
	out := ` ❯ src/server/routers/team.test.ts  (0 test)
 ❯ src/server/routers/project.test.ts  (0 test)
 ✓ src/lib/slug.test.ts  (11 tests) 6ms

⎯⎯⎯⎯⎯⎯ Failed Suites 2 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/server/routers/team.test.ts [ src/server/routers/team.test.ts ]
 FAIL  src/server/routers/project.test.ts [ src/server/routers/project.test.ts ]
Error: @prisma/client did not initialize yet. Please run "prisma generate" and try to import it again.
 ❯ new PrismaClient node_modules/.prisma/client/default.js:43:11
 ❯ src/server/db.ts:6:3
      4| const globalForPrisma = globalThis as unknown as { prisma?: PrismaClient };

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/2]⎯

 Test Files  2 failed | 1 passed (3)
      Tests  11 passed (11)
`
	r := ParseTests(out)
	if len(r.Failed) != 0 || len(r.Suites) != 2 {
		t.Fatalf("failed %+v, suites %+v: want 2 suites", r.Failed, r.Suites)
	}
	want := `2 suites failed to run: src/server/routers/team.test.ts, src/server/routers/project.test.ts (src/server/db.ts:6: Error: @prisma/client did not initialize yet. Please run "prisma generate" and try to import it again.)`
	if got := r.Summary(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
}

// A build run by another tool keeps the build's own error lines, under the wrapper's prefix
// (BuildKit's step and seconds) or as a line of its own (Next.js's "Type error:").
func TestWrappedBuildErrors(t *testing.T) {
	buildkit := `#11 [builder 6/6] RUN CGO_ENABLED=0 go build -trimpath -o /out/relay ./cmd/relay
#11 9.214 # relay/internal/queue
#11 9.214 internal/queue/retry.go:11:9: undefined: backoffDelay
#11 ERROR: process "/bin/sh -c CGO_ENABLED=0 go build -trimpath -o /out/relay ./cmd/relay" did not complete successfully: exit code: 1
ERROR: failed to solve: process "/bin/sh -c CGO_ENABLED=0 go build -trimpath -o /out/relay ./cmd/relay" did not complete successfully: exit code: 1
`
	if got := ParseTests(buildkit).Build; len(got) != 1 || got[0] != "internal/queue/retry.go:11:9: undefined: backoffDelay" {
		t.Errorf("BuildKit: build lines %q", got)
	}
	next := "   Linting and checking validity of types  ..Failed to compile.\n\n./app/dashboard/user-card.tsx:18:19\nType error: Property 'avatarUrl' does not exist on type 'User'.\n\nNext.js build worker exited with code: 1 and signal: null\n"
	if got := ParseTests(next).Build; len(got) != 1 || !strings.HasPrefix(got[0], "Type error: Property 'avatarUrl'") {
		t.Errorf("Next.js: build lines %q", got)
	}
	if got := ParseTests("2024-05-01T10:00:00.1234567Z internal/a.go:3:1: syntax error: unexpected }\n").Build; len(got) != 1 {
		t.Errorf("a CI log's timestamp hides the error: %q", got)
	}
}

// The Elixir compiler's errors read as build lines "file:line: error: message": Elixir 1.17's
// boxed error (bonfire-networks/iconify_ex#10), 1.15's plain one (mgamini/elixilorem#5), and
// the raise of older versions under mix test (bitwalker/distillery#666). The closing "cannot
// compile module … (errors have been logged)" says nothing the lines above did not.
func TestElixirBuildErrors(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"1.17, boxed", `Compiling 3 files (.ex)
     error: undefined function .../0 (expected Iconify to define such a function or for it to be imported, but none are available)
     │
 827 │         |> Phx.Live.Favicon.set_dynamic(socket, "svg", ...)
     │                                                        ^^^
     │
     └─ lib/iconify.ex:827:56: Iconify.maybe_set_favicon_emoji/2


== Compilation error in file lib/iconify.ex ==
** (CompileError) lib/iconify.ex: cannot compile module Iconify (errors have been logged)
`, "does not build: lib/iconify.ex:827:56: error: undefined function .../0 (expected Iconify to define such a function or for it to be imported, but none are available)"},
		{"1.15, plain", `error: undefined variable "paragraphs"
  lib/elixilorem.ex:4: Elixilorem.paragraph/0

warning: function package/0 is unused
  mix.exs:22: Elixilorem.Mixfile (module)

== Compilation error in file lib/elixilorem.ex ==
** (CompileError) lib/elixilorem.ex: cannot compile module Elixilorem (errors have been logged)
`, `does not build: lib/elixilorem.ex:4: error: undefined variable "paragraphs"`},
		{"before 1.15, under mix test", `.....................warning: variable "err" does not exist and is being expanded to "err()", please use parentheses to remove the ambiguity or change the variable name
  test/cases/integration_test.exs:263

...............................................................................
OK, passed 100 tests
.
== Compilation error in file test/cases/integration_test.exs ==
** (CompileError) test/cases/integration_test.exs:263: undefined function err/0
    (elixir) src/elixir_locals.erl:107: :elixir_locals."-ensure_no_undefined_local/3-lc$^0/1-0-"/2
    (stdlib) erl_eval.erl:677: :erl_eval.do_apply/6
`, "does not build: ** (CompileError) test/cases/integration_test.exs:263: undefined function err/0"},
	} {
		if got := ParseTests(c.out).Summary(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// A module whose setup_all failed ran none of its tests (elixir-lang/elixir#10974): a suite
// that failed to run, named by the module.
func TestExUnitSetupAll(t *testing.T) {
	out := `  1) SampleTest: failure on setup_all callback, all tests have been invalidated
     ** (RuntimeError) boom
     stacktrace:
       test/sample_test.exs:6: anonymous fn/0 in SampleTest.__ex_unit_setup_all_0/1
       (ex_unit 1.10.4) lib/ex_unit/on_exit_handler.ex:142: ExUnit.OnExitHandler.exec_callback/1



Finished in 0.03 seconds
1 test, 0 failures, 1 invalid
`
	r := ParseTests(out)
	if got, want := r.Summary(), "1 suite failed to run: SampleTest (** (RuntimeError) boom)"; got != want || len(r.Failed) != 0 {
		t.Errorf("got  %s (%d failed)\nwant %s", got, len(r.Failed), want)
	}
	if r.Passed != 0 || r.Total != 1 {
		t.Errorf("counts %d/%d, want 0/1", r.Passed, r.Total)
	}
}

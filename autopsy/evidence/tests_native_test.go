package evidence

import (
	"strings"
	"testing"
)

// CTest's and meson test's reports, and what the test programs under them printed. The layouts
// are the tools' own: CTest's progress lines, "N% tests passed" and its FAILED list as in
// ParBLiSS/FastANI#119 and opencog/opencog#327 (Catch2's failure block there too); meson 1.x's
// result lines and summary as in flatpak/libportal#97; compiler-rt's sanitizer reports as in
// NOAA-OWP/ngen#536 and mantidproject/mantid#703; glibc's assert message. TestParseTests
// reads them with the other runners' samples.
var nativeSamples = []runnerSample{
	{"ctest, a segfault, Catch2 and AddressSanitizer", `Test project /home/u/ringbuf/build
    Start 1: ringbuf_basic
1/4 Test #1: ringbuf_basic ....................   Passed    0.01 sec
    Start 2: ringbuf_wrap
2/4 Test #2: ringbuf_wrap .....................***Exception: SegFault  0.12 sec
    Start 3: ringbuf_catch
3/4 Test #3: ringbuf_catch ....................***Failed    0.02 sec

-------------------------------------------------------------------------------
wraps after capacity
-------------------------------------------------------------------------------
/home/u/ringbuf/tests/catch_ringbuf.cpp:20
...............................................................................

/home/u/ringbuf/tests/catch_ringbuf.cpp:31: FAILED:
  REQUIRE( rb.size() == 3 )
with expansion:
  2 == 3

===============================================================================
test cases: 1 | 1 failed
assertions: 1 | 1 failed

    Start 4: ringbuf_push
4/4 Test #4: ringbuf_push .....................***Failed    0.05 sec
=================================================================
==31337==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000020 at pc 0x55d4c3a1b2c4 bp 0x7ffd3c1e8a10 sp 0x7ffd3c1e8a00
WRITE of size 4 at 0x602000000020 thread T0
    #0 0x55d4c3a1b2c3 in rb_push /home/u/ringbuf/src/ringbuf.c:42
    #1 0x55d4c3a1a3f1 in main /home/u/ringbuf/tests/ringbuf_push.c:12
    #2 0x7f0e1c829d8f in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58

0x602000000020 is located 0 bytes after 16-byte region [0x602000000010,0x602000000020)
allocated by thread T0 here:
    #0 0x7f0e1d0b4887 in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:145
    #1 0x55d4c3a1b0a2 in rb_new /home/u/ringbuf/src/ringbuf.c:17

SUMMARY: AddressSanitizer: heap-buffer-overflow /home/u/ringbuf/src/ringbuf.c:42 in rb_push
==31337==ABORTING

25% tests passed, 3 tests failed out of 4

Total Test time (real) =   0.21 sec

The following tests FAILED:
	  2 - ringbuf_wrap (SEGFAULT)
	  3 - ringbuf_catch (Failed)
	  4 - ringbuf_push (Failed)
Errors while running CTest
`, []string{
		"ringbuf_wrap : SEGFAULT",
		"ringbuf_catch @ /home/u/ringbuf/tests/catch_ringbuf.cpp:31 : REQUIRE( rb.size() == 3 ) with expansion: 2 == 3",
		"ringbuf_push @ /home/u/ringbuf/src/ringbuf.c:42 : AddressSanitizer: heap-buffer-overflow in rb_push",
	}, 1, 4},
	{"ctest, UndefinedBehaviorSanitizer", `    Start 1: bits
1/1 Test #1: bits .............................***Failed    0.01 sec
src/bits.c:12:5: runtime error: shift exponent 32 is too large for 32-bit type 'int'
SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior src/bits.c:12:5 in

0% tests passed, 1 tests failed out of 1

The following tests FAILED:
	  1 - bits (Failed)
Errors while running CTest
`, []string{"bits @ src/bits.c:12 : runtime error: shift exponent 32 is too large for 32-bit type 'int'"}, 0, 1},
	// googletest programs under CTest: the failing tests are googletest's, and a program that
	// died (here in AddressSanitizer's abort) died in the test it had started (googletest's
	// own layout; the report as in NOAA-OWP/ngen#536).
	{"ctest, googletest", `    Start 1: nmea_test
1/2 Test #1: nmea_test ........................***Failed    0.08 sec
Running main() from /home/ci/gnss/build/_deps/googletest-src/googletest/src/gtest_main.cc
[==========] Running 2 tests from 1 test suite.
[ RUN      ] Nmea.ParsesGga
[       OK ] Nmea.ParsesGga (0 ms)
[ RUN      ] Nmea.AcceptsLowercaseChecksum
/home/ci/gnss/tests/nmea_test.cpp:22: Failure
Value of: gnss::parse_sentence("$GPRMC,123519,A*6a").has_value()
  Actual: false
Expected: true
[  FAILED  ] Nmea.AcceptsLowercaseChecksum (0 ms)
[==========] 2 tests from 1 test suite ran. (1 ms total)
[  PASSED  ] 1 test.
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Nmea.AcceptsLowercaseChecksum

 1 FAILED TEST
    Start 2: ubx_test
2/2 Test #2: ubx_test .........................Subprocess aborted***Exception:   0.09 sec
[==========] Running 3 tests from 1 test suite.
[ RUN      ] Ubx.DecodesNavPvt
=================================================================
==48213==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6060000002f8 at pc 0x55d0c1a3b2e4 bp 0x7ffd5f1a2b10 sp 0x7ffd5f1a2b08
READ of size 1 at 0x6060000002f8 thread T0
    #0 0x55d0c1a3b2e3 in gnss::ubx_payload(std::basic_string_view<char, std::char_traits<char> >) /home/ci/gnss/src/ubx.cpp:18:74
    #1 0x55d0c1a2d9f1 in Ubx_DecodesNavPvt_Test::TestBody() /home/ci/gnss/tests/ubx_test.cpp:14:17
    #2 0x55d0c1a6f2c0 in testing::Test::Run() /home/ci/gnss/build/_deps/googletest-src/googletest/src/gtest.cc:2674:5

SUMMARY: AddressSanitizer: heap-buffer-overflow /home/ci/gnss/src/ubx.cpp:18:74 in gnss::ubx_payload(std::basic_string_view<char, std::char_traits<char> >)
==48213==ABORTING

0% tests passed, 2 tests failed out of 2

The following tests FAILED:
	  1 - nmea_test (Failed)
	  2 - ubx_test (Subprocess aborted)
Errors while running CTest
`, []string{
		"Nmea.AcceptsLowercaseChecksum @ /home/ci/gnss/tests/nmea_test.cpp:22 : Value of: gnss::parse_sentence(\"$GPRMC,123519,A*6a\").has_value() Actual: false Expected: true",
		"Ubx.DecodesNavPvt @ /home/ci/gnss/src/ubx.cpp:18 : AddressSanitizer: heap-buffer-overflow in gnss::ubx_payload",
	}, 0, 2},
	// Tests CTest could not run did not fail (OpenMS/OpenMS#6855: a multi-config build without -C).
	{"ctest, tests not run", `      Start  1: ring_buffer_test
Test not available without configuration.  (Missing "-C <config>"?)
 1/2 Test  #1: ring_buffer_test .................***Not Run   0.00 sec
      Start  2: frame_codec_test
Test not available without configuration.  (Missing "-C <config>"?)
 2/2 Test  #2: frame_codec_test .................***Not Run   0.00 sec

0% tests passed, 2 tests failed out of 2

Total Test time (real) =   0.02 sec

The following tests FAILED:
	  1 - ring_buffer_test (Not Run)
	  2 - frame_codec_test (Not Run)
Errors while running CTest
`, nil, 0, 0},
	{"meson test", `ninja: Entering directory ` + "`" + `/home/u/ringbuf/build'
ninja: no work to do.
1/3 ringbuf_basic        OK              0.01s
2/3 ringbuf_wrap         FAIL            0.02s   exit status 1
>>> MALLOC_PERTURB_=187 /home/u/ringbuf/build/ringbuf_wrap
――――――――――――――――――――――――――――――――――――― ✀  ―――――――――――――――――――――――――――――――――――――
stderr:
ringbuf_wrap: ../tests/ringbuf_wrap.c:17: main: Assertion ` + "`" + `rb_len(&rb) == 3' failed.
――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――――

3/3 Qt unit test         FAIL            0.23s   killed by signal 6 SIGABRT
>>> MALLOC_PERTURB_=44 /home/u/ringbuf/build/tests/qt5/qt-test


Summary of Failures:

2/3 ringbuf_wrap         FAIL            0.02s   exit status 1
3/3 Qt unit test         FAIL            0.23s   killed by signal 6 SIGABRT

Ok:                 1
Expected Fail:      0
Fail:               2
Unexpected Pass:    0
Skipped:            0
Timeout:            0

Full log written to /home/u/ringbuf/build/meson-logs/testlog.txt
`, []string{
		"ringbuf_wrap @ ../tests/ringbuf_wrap.c:17 : Assertion `rb_len(&rb) == 3' failed.",
		"Qt unit test : FAIL: killed by signal 6 SIGABRT",
	}, 1, 3},
	// automake's harness under make check (its summary as in flatsurf/exact-real#62 and
	// ClusterLabs/libqb#344), then the verify's `cat tests/test-suite.log`.
	{"automake make check", `make  check-TESTS
PASS: test_queue
FAIL: test_ringbuf
ERROR: test_codec
============================================================================
Testsuite summary for tinyq 0.9.2
============================================================================
# TOTAL: 3
# PASS:  1
# SKIP:  0
# XFAIL: 0
# FAIL:  1
# XPASS: 0
# ERROR: 1
============================================================================
See tests/test-suite.log
Please report to dev@tinyq.example
============================================================================
make[3]: *** [Makefile:771: test-suite.log] Error 1
make: *** [Makefile:568: check-recursive] Error 1
=======================================
   tinyq 0.9.2: tests/test-suite.log
=======================================

# TOTAL: 3
# PASS:  1
# SKIP:  0
# XFAIL: 0
# FAIL:  1
# XPASS: 0
# ERROR: 1

.. contents:: :depth: 2

FAIL: test_ringbuf
==================

test_ringbuf: test_ringbuf.c:58: test_push_when_full: Assertion ` + "`" + `ring_buffer_len(&rb) == 4' failed.
FAIL test_ringbuf (exit status: 134)

ERROR: test_codec
=================

ERROR test_codec (exit status: 99)
`, []string{"test_ringbuf @ test_ringbuf.c:58 : Assertion `ring_buffer_len(&rb) == 4' failed.", "test_codec : ERROR"}, 1, 3},
	// meson 0.56 (mesonbuild/meson#8000): the reason in parentheses, a suite before the name.
	{"meson 0.56, a suite", "1/1 trivial:unit / runtest FAIL           0.00s (exit status 1)\n\nOk:                 0   \nExpected Fail:      0   \nFail:               1   \n",
		[]string{"trivial:unit runtest : FAIL: exit status 1"}, 0, 1},
}

// A log whose head was cut (the verify keeps its tail) still names googletest's failures.
func TestGTestHeadCut(t *testing.T) {
	out := "/src/tests/ring_test.cc:41: Failure\nExpected equality of these values:\n  rb.size()\n    Which is: 2\n  3\n[  FAILED  ] Ring.Wraps (0 ms)\n[ RUN      ] Ring.Empty\n[       OK ] Ring.Empty (0 ms)\n[==========] 9 tests from 1 test suite ran. (2 ms total)\n"
	if got, want := ParseTests(out).Summary(), "1 failed: Ring.Wraps (/src/tests/ring_test.cc:41: Expected equality of these values: rb.size() Which is: 2 3)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A sanitizer's report names what went wrong and where; the runner's trailer after it only
// that something failed. With no runner that names a test (a test binary run by make), it is
// the decisive line.
func TestDecisiveLineSanitizers(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"asan under ctest", nativeSamples[0].out, "/home/u/ringbuf/src/ringbuf.c:42: AddressSanitizer: heap-buffer-overflow in rb_push"},
		{"ctest could not run the tests", nativeSamples[3].out, `Test not available without configuration.  (Missing "-C <config>"?)`},
		{"automake's summary is not why", "FAIL: test_ringbuf\n# TOTAL: 1\n# PASS:  0\n# FAIL:  1\nSee tests/test-suite.log\nmake: *** [Makefile:568: check-recursive] Error 1\n", "FAIL: test_ringbuf"},
		{"ubsan under ctest", nativeSamples[1].out, "src/bits.c:12: runtime error: shift exponent 32 is too large for 32-bit type 'int'"},
		// LeakSanitizer: the first frame is the allocator's, the place is the caller's.
		{"leaks under make", `./ringbuf_test
=================================================================
==4242==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 16 byte(s) in 1 object(s) allocated from:
    #0 0x7f0e1d0b4887 in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:145
    #1 0x55d4c3a1b0a2 in rb_new /home/u/ringbuf/src/ringbuf.c:17
    #2 0x55d4c3a1a3f1 in main /home/u/ringbuf/tests/ringbuf_test.c:9

SUMMARY: AddressSanitizer: 16 byte(s) leaked in 1 allocation(s).
make: *** [Makefile:12: check] Error 1
`, "/home/u/ringbuf/src/ringbuf.c:17: LeakSanitizer: detected memory leaks in rb_new"},
		{"meson's counts are not why", "2/2 ringbuf_wrap FAIL 0.02s exit status 1\n>>> /b/ringbuf_wrap\nwrap: expected 3 elements, got 2\n\nOk:                 1\nFail:               1\n",
			"2/2 ringbuf_wrap FAIL 0.02s exit status 1"},
	} {
		if got := DecisiveLine(c.out); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// GCC's and Clang's "file:line:col: error: message" (a meson build under ninja, a make build)
// say the code does not build, as other compilers' do.
func TestCBuildErrors(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"[2/5] Compiling C object libring.a.p/src_frame.c.o\nFAILED: libring.a.p/src_frame.c.o\n../src/frame.c:31:5: error: too few arguments to function 'crc16_ccitt'\n   31 |     crc16_ccitt(buf);\n      |     ^~~~~~~~~~~\nninja: build stopped: subcommand failed.\n",
			"does not build: ../src/frame.c:31:5: error: too few arguments to function 'crc16_ccitt'"},
		{"/home/dev/src/geotile/src/geo/tile_index.cc:41:6: error: 'optional' in namespace 'std' does not name a template type\nmake[2]: *** [CMakeFiles/geotile.dir/build.make:90: CMakeFiles/geotile.dir/src/geo/tile_index.cc.o] Error 1\n",
			"does not build: /home/dev/src/geotile/src/geo/tile_index.cc:41:6: error: 'optional' in namespace 'std' does not name a template type"},
	} {
		if got := ParseTests(c.out).Summary(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// ziglang/zig's test runner: the failing test by its name, where it failed in the project.
func TestParseZig(t *testing.T) {
	out := "└─ run test 5/6 passed, 1 failed\nerror: 'tokenizer.test.split keeps commas inside quotes' failed: expected 2, found 4\n/opt/zig/lib/std/testing.zig:103:17: 0x1049f3c in expectEqualInner__anon_2941 (test)\n                return error.TestExpectedEqual;\n/home/ana/csvz/src/tokenizer.zig:48:5: 0x104a51e in test.split keeps commas inside quotes (test)\n"
	got := ParseTests(out).Failed
	if len(got) != 1 || got[0].Name != "tokenizer.test.split keeps commas inside quotes" || got[0].File != "/home/ana/csvz/src/tokenizer.zig" || got[0].Line != 48 || got[0].Message != "expected 2, found 4" {
		t.Fatalf("%+v", got)
	}
}

// swift-corelibs-xctest on Linux: an assertion's failure is an "error:" at its place, a test's
// and not the compiler's.
func TestParseXCTest(t *testing.T) {
	out := "Test Suite 'UnitsTests' started at 2026-12-05 02:11:09.612\nTest Case 'TemperatureTests.testMinusFortyIsTheSame' started at 2026-12-05 02:11:09.613\n" +
		"/home/dev/units/Tests/UnitsTests/TemperatureTests.swift:27: error: TemperatureTests.testMinusFortyIsTheSame : XCTAssertEqual failed: (\"-39.99\") is not equal to (\"-40.0\") - \n" +
		"Test Case 'TemperatureTests.testMinusFortyIsTheSame' failed (0.002 seconds)\n\t Executed 12 tests, with 1 failure (0 unexpected) in 0.031 (0.031) seconds\n"
	r := ParseTests(out)
	if len(r.Failed) != 1 || r.Failed[0].Name != "TemperatureTests.testMinusFortyIsTheSame" || r.Failed[0].Line != 27 || !strings.HasPrefix(r.Failed[0].Message, "XCTAssertEqual failed") || len(r.Build) != 0 || r.Total != 12 || r.Passed != 11 {
		t.Fatalf("%+v", r)
	}
}

// open-cli-tools/concurrently: each command's lines carry its name; the runners read past it,
// and the SIGTERM it sends the others once one ended is not how the verify ended.
func TestConcurrentlyPrefix(t *testing.T) {
	out := "[TEST]  FAIL   browser: chromium  src/components/DateRangePicker.stories.tsx\n[TEST]   ● Components/DateRangePicker › WithPresets › play-test\n[TEST] Tests:       1 failed, 14 passed, 15 total\n[TEST] test-storybook --url http://127.0.0.1:6006 exited with code 1\n--> Sending SIGTERM to other processes..\n[SB] http-server storybook-static --port 6006 --silent exited with code SIGTERM\n"
	if got := ParseTests(out).Failed; len(got) == 0 {
		t.Errorf("no failing test read past concurrently's prefix")
	}
	if e := ExitOf(1, out); e.Kind == Terminated {
		t.Errorf("the SIGTERM concurrently sent the others read as the verify's end: %+v", e)
	}
}

// JuliaLang/julia's Test stdlib; jest's and pytest-cov's coverage gates read as a check.
func TestParseJuliaAndCoverage(t *testing.T) {
	out := "empty: Test Failed at /home/jl/Intervals2.jl/test/runtests.jl:18\n  Expression: isempty(intersect(Interval(0, 1), Interval(2, 3)))\nTest Summary: | Pass  Fail  Total  Time\n"
	got := ParseTests(out).Failed
	if len(got) != 1 || got[0].Name != "empty runtests.jl:18" || got[0].Line != 18 || got[0].Message == "" {
		t.Fatalf("%+v", got)
	}
	for _, out := range []string{
		"vanderpol adaptive: Error During Test at /home/pg/StiffSteps.jl/test/runtests.jl:31\n  Got exception outside of a @test\n  MethodError: no method matching norm(::Vector{Float64}, ::Symbol)\n\n  Closest candidates are:\n",
		"vanderpol adaptive: Error During Test at /home/pg/StiffSteps.jl/test/runtests.jl:31\n  Test threw exception\n  Expression: solve(p).nsteps < 2000\n  MethodError: no method matching norm(::Vector{Float64}, ::Symbol)\n",
	} {
		got := ParseTests(out).Failed
		if len(got) != 1 || got[0].Name != "vanderpol adaptive runtests.jl:31" || !strings.HasPrefix(got[0].Message, "MethodError: no method matching norm") {
			t.Errorf("a test that raised: %+v", got)
		}
	}
	for _, l := range []string{`Jest: "global" coverage threshold for branches (80%) not met: 62.5%`, "FAIL Required test coverage of 90% not reached. Total coverage: 83.70%"} {
		if r := ParseTests(l + "\n"); len(r.Checks) != 1 {
			t.Errorf("%q: %+v", l, r)
		}
	}
}

// Test::More under prove (Test::Harness's own layout): a failed check with its place and values;
// a file that died before its plan, for the reason it printed after its dots.
func TestParseTAP(t *testing.T) {
	out := "t/00-load.t ...... ok\n" +
		"t/basic.t ........ 1/3 \n#   Failed test 'adds'\n#   at t/basic.t line 9.\n#          got: '3'\n#     expected: '4'\n# Looks like you failed 1 test of 3.\n" +
		"t/basic.t ........ Dubious, test returned 1 (wstat 256, 0x100)\nFailed 1/3 subtests \n" +
		"t/parse.t ........ Can't locate Test/Deep.pm in @INC (you may need to install the Test::Deep module) (@INC contains: /etc/perl) at t/parse.t line 6.\n" +
		"BEGIN failed--compilation aborted at t/parse.t line 6.\nt/parse.t ........ Dubious, test returned 2 (wstat 512, 0x200)\nNo subtests run \n\n" +
		"Test Summary Report\n-------------------\nt/basic.t (Wstat: 256 (exited 1) Tests: 3 Failed: 1)\n  Failed test:  2\nFiles=3, Tests=4,  0 wallclock secs\nResult: FAIL\n"
	r := ParseTests(out)
	if len(r.Failed) != 1 || r.Failed[0].Name != "adds" || r.Failed[0].Where() != "t/basic.t:9" || r.Failed[0].Message != "got '3', expected '4'" {
		t.Errorf("failed: %+v", r.Failed)
	}
	if len(r.Suites) != 1 || r.Suites[0].Name != "t/parse.t" || !strings.HasPrefix(r.Suites[0].Message, "Can't locate Test/Deep.pm in @INC") {
		t.Errorf("suites: %+v", r.Suites)
	}
	if got := ParseTests("#   Failed test at t/x.t line 12.\n").Failed; len(got) != 1 || got[0].Name != "t/x.t:12" {
		t.Errorf("an unnamed check: %+v", got)
	}
}

// commitlint's rejection of a commit message is a check, not a build or a test; its help link
// is not why.
func TestCommitlintIsACheck(t *testing.T) {
	out := "⧗   input: init\n✖   subject may not be empty [subject-empty]\n✖   type may not be empty [type-empty]\n\n✖   found 2 problems, 0 warnings\nⓘ   Get help: https://github.com/conventional-changelog/commitlint/#what-is-commitlint\n"
	if r := ParseTests(out); len(r.Checks) != 2 || !strings.Contains(r.Summary(), "subject may not be empty") {
		t.Errorf("%+v", r)
	}
	if l := DecisiveLine(out); strings.Contains(l, "Get help") {
		t.Errorf("decisive line %q", l)
	}
}

// TAP's "not ok" lines: bats with its place and the check that failed; a TODO test is no failure.
func TestParseNotOK(t *testing.T) {
	out := "1..9\nok 1 backup.sh copies dotfiles\nnot ok 4 backup.sh --dry-run prints rsync commands\n# (in test file tests/backup.bats, line 41)\n#   `[ \"$status\" -eq 0 ]' failed\n" +
		"not ok 7 the new flag # TODO not yet\nnot ok 9 rotate.sh keeps seven archives\n# (in test file tests/rotate.bats, line 23)\n"
	got := ParseTests(out).Failed
	if len(got) != 2 || got[0].Name != "backup.sh --dry-run prints rsync commands" || got[0].Where() != "tests/backup.bats:41" ||
		got[0].Message != "`[ \"$status\" -eq 0 ]' failed" || got[1].Where() != "tests/rotate.bats:23" {
		t.Errorf("%+v", got)
	}
}

// package:test's reporter (flutter test) and dart analyze's findings.
func TestParseDart(t *testing.T) {
	out := "00:01 +1 -1: RatingBar renders a half star for 3.5 [E]\n  Expected: exactly one matching candidate\n    Actual: _IconWidgetFinder:<Found 0 widgets>\n\n" +
		"  #4      main.<anonymous closure> (file:///home/dev/star_rating/test/rating_bar_test.dart:31:5)\n00:01 +1 -1: RatingBar clamps ratings above max\n00:02 +3 -1: Some tests failed.\n"
	got := ParseTests(out).Failed
	if len(got) != 1 || got[0].Name != "RatingBar renders a half star for 3.5" || got[0].Where() != "/home/dev/star_rating/test/rating_bar_test.dart:31" || got[0].Message != "Expected: exactly one matching candidate" {
		t.Errorf("%+v", got)
	}
	a := "Analyzing tiny_csv...\n\nwarning - lib/src/csv_line.dart:1:8 - Unused import: 'dart:convert'. Try removing the import directive. - unused_import\n\n1 issue found.\n"
	if r := ParseTests(a); len(r.Checks) != 1 || DecisiveLine(a) == "1 issue found." {
		t.Errorf("dart analyze: %+v, %q", r, DecisiveLine(a))
	}
}

// An assert that quotes a traceback with its newlines escaped (Airflow's DagBag.import_errors):
// the exception that ends it is the test's message, not "Traceback (most recent call last)".
func TestPytestEscapedTraceback(t *testing.T) {
	out := "____________________________ test_no_import_errors _____________________________\n\n" +
		"E       AssertionError: {'/opt/airflow/dags/ingest.py': 'Traceback (most recent call last):\\n  File \"/opt/airflow/dags/ingest.py\", line 6, in <module>\\n    from airflow.utils.task_group import TaskGroupContext\\nImportError: cannot import name \\'TaskGroupContext\\' from \\'airflow.utils.task_group\\'\\n'}\n\n" +
		"tests/test_dag_integrity.py:9: AssertionError\n=========================== short test summary info ============================\n" +
		"FAILED tests/test_dag_integrity.py::test_no_import_errors - AssertionError: {'/opt/airflow/dags/ingest.py': 'Traceback (most recent call last):\\n ...\n"
	got := ParseTests(out).Failed
	if len(got) != 1 || !strings.HasPrefix(got[0].Message, "ImportError: cannot import name") {
		t.Errorf("%+v", got)
	}
}

// gitleaks's and semgrep's findings are checks, each with its place and rule.
func TestParseScanners(t *testing.T) {
	leaks := "Finding:     aws_access_key_id = REDACTED\nSecret:      REDACTED\nRuleID:      aws-access-token\nEntropy:     3.684184\nFile:        tests/fixtures/boto_config.ini\nLine:        2\n\n" +
		"Finding:     \"AccessKeyId\": \"REDACTED\",\nRuleID:      aws-access-token\nFile:        tests/fixtures/sts_response.json\nLine:        4\n\n11:42PM WRN leaks found: 2\n"
	if r := ParseTests(leaks); len(r.Checks) != 2 || r.Checks[0] != "tests/fixtures/boto_config.ini:2: aws-access-token (gitleaks)" {
		t.Errorf("gitleaks: %q", r.Checks)
	}
	sem := "┌─────────────────┐\n│ 1 Code Finding  │\n└─────────────────┘\n\n    api/reports.py\n   ❯❯❱ python.lang.security.audit.subprocess-shell-true.subprocess-shell-true\n          Found 'subprocess' function 'run' with 'shell=True'.\n"
	if r := ParseTests(sem); len(r.Checks) != 1 || r.Checks[0] != "api/reports.py: python.lang.security.audit.subprocess-shell-true.subprocess-shell-true (semgrep)" {
		t.Errorf("semgrep: %q", r.Checks)
	}
}

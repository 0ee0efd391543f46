package taskfile

import (
	"testing"
	"time"
)

func bkRnd(v float64) func() float64 { return func() float64 { return v } }

func TestBackoffBase(t *testing.T) {
	none := func(kind string) Backoff {
		return Backoff{Kind: kind, Initial: time.Second, Max: time.Minute, Jitter: JitterNone}
	}
	tests := []struct {
		b    Backoff
		k    int
		want time.Duration
	}{
		{none(BackoffFixed), 1, time.Second},
		{none(BackoffFixed), 50, time.Second},
		{none(BackoffLinear), 1, time.Second},
		{none(BackoffLinear), 7, 7 * time.Second},
		{none(BackoffLinear), 61, time.Minute},
		{none(BackoffLinear), 1 << 62, time.Minute},
		{none(BackoffExponential), 1, time.Second},
		{none(BackoffExponential), 2, 2 * time.Second},
		{none(BackoffExponential), 6, 32 * time.Second},
		{none(BackoffExponential), 7, time.Minute},
		{none(BackoffExponential), 200, time.Minute},
		{none(""), 3, 4 * time.Second},             // empty kind is exponential
		{none(BackoffExponential), 0, time.Second}, // k < 1 counts as 1
		{none(BackoffExponential), -5, time.Second},
		// No overflow even with the largest max and a nanosecond initial.
		{Backoff{Kind: BackoffExponential, Initial: 1, Max: 1<<63 - 1, Jitter: JitterNone}, 200, 1<<63 - 1},
		{Backoff{Kind: BackoffExponential, Initial: 3, Max: 1<<63 - 1, Jitter: JitterNone}, 63, 1<<63 - 1},
		{Backoff{Kind: BackoffExponential, Initial: 3, Max: 1<<63 - 1, Jitter: JitterNone}, 62, 3 << 61},
		{Backoff{Kind: BackoffLinear, Initial: time.Hour, Max: 1<<63 - 1, Jitter: JitterNone}, 1 << 40, 1<<63 - 1},
		// Zero initial: no delay, whatever k (and no endless doubling loop).
		{Backoff{Kind: BackoffExponential, Jitter: JitterNone}, 1 << 62, 0},
		// Zero max means the default max.
		{Backoff{Kind: BackoffExponential, Initial: time.Second, Jitter: JitterNone}, 200, DefaultBackoffMax},
	}
	for _, tt := range tests {
		if got := tt.b.Delay(tt.k, 0, bkRnd(0.5)); got != tt.want {
			t.Errorf("%+v.Delay(%d) = %v, want %v", tt.b, tt.k, got, tt.want)
		}
	}
}

func TestBackoffJitter(t *testing.T) {
	d := 8 * time.Second
	b := func(j string) Backoff { return Backoff{Kind: BackoffFixed, Initial: d, Max: time.Minute, Jitter: j} }
	almostOne := 0.9999999999999999
	tests := []struct {
		jitter string
		r      float64
		want   time.Duration
	}{
		{JitterFull, 0, 0},
		{JitterFull, 0.5, 4 * time.Second},
		{JitterFull, almostOne, time.Duration(float64(d) * almostOne)},
		{"", 0.5, 4 * time.Second}, // empty is full
		{JitterEqual, 0, 4 * time.Second},
		{JitterEqual, 0.5, 6 * time.Second},
		{JitterEqual, almostOne, 4*time.Second + time.Duration(float64(4*time.Second)*almostOne)},
		{JitterNone, 0, d},
		{JitterNone, almostOne, d},
		// A broken rnd is clamped into range.
		{JitterFull, 7, d},
		{JitterFull, -1, 0},
	}
	for _, tt := range tests {
		got := b(tt.jitter).Delay(1, 0, bkRnd(tt.r))
		if got != tt.want {
			t.Errorf("jitter %q r=%v: %v, want %v", tt.jitter, tt.r, got, tt.want)
		}
		if got < 0 || got > d {
			t.Errorf("jitter %q r=%v: %v out of [0, %v]", tt.jitter, tt.r, got, d)
		}
	}
	// The full range of each mode at the cap.
	capped := Backoff{Kind: BackoffExponential, Initial: time.Second, Max: time.Minute}
	for _, r := range []float64{0, 0.25, 0.5, almostOne} {
		if got := capped.Delay(200, 0, bkRnd(r)); got < 0 || got >= time.Minute {
			t.Errorf("full jitter at cap r=%v: %v", r, got)
		}
		capped.Jitter = JitterEqual
		if got := capped.Delay(200, 0, bkRnd(r)); got < 30*time.Second || got >= time.Minute {
			t.Errorf("equal jitter at cap r=%v: %v", r, got)
		}
		capped.Jitter = ""
	}
	// nil rnd uses math/rand and stays in range.
	for range 100 {
		if got := b(JitterFull).Delay(1, 0, nil); got < 0 || got > d {
			t.Fatalf("nil rnd: %v", got)
		}
	}
}

func TestBackoffRetryAfterFloor(t *testing.T) {
	b := Backoff{Kind: BackoffExponential, Initial: time.Second, Max: time.Minute, Jitter: JitterFull}
	if got := b.Delay(3, time.Hour, bkRnd(0.5)); got != time.Hour {
		t.Errorf("retry_after above the delay: %v, want 1h", got)
	}
	if got := b.Delay(3, time.Second, bkRnd(0.5)); got != 2*time.Second {
		t.Errorf("retry_after below the delay: %v, want 2s", got)
	}
	if got := b.Delay(3, 0, bkRnd(0)); got != 0 {
		t.Errorf("no retry_after, zero jitter draw: %v", got)
	}
	// The floor applies after the jitter: a zero draw still waits retry_after.
	if got := b.Delay(3, 10*time.Second, bkRnd(0)); got != 10*time.Second {
		t.Errorf("floor after jitter: %v", got)
	}
}

func TestParseBackoffSpec(t *testing.T) {
	tests := map[string]Backoff{
		"exponential":                DefaultBackoff(),
		"exponential:1s:5m":          DefaultBackoff(),
		"fixed:2s":                   {Kind: BackoffFixed, Initial: 2 * time.Second, Max: 5 * time.Minute, Jitter: JitterNone},
		"fixed:10m":                  {Kind: BackoffFixed, Initial: 10 * time.Minute, Max: 10 * time.Minute, Jitter: JitterNone},
		"fixed:2s:5m:full":           {Kind: BackoffFixed, Initial: 2 * time.Second, Max: 5 * time.Minute, Jitter: JitterFull},
		"linear:0:1m:none":           {Kind: BackoffLinear, Initial: 0, Max: time.Minute, Jitter: JitterNone},
		"exponential:500ms:1h:equal": {Kind: BackoffExponential, Initial: 500 * time.Millisecond, Max: time.Hour, Jitter: JitterEqual},
	}
	for in, want := range tests {
		got, err := parseBackoffSpec(in)
		if err != nil || got != want {
			t.Errorf("parseBackoffSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":               `unknown backoff kind "" (fixed, linear or exponential)`,
		"fixed:2x":       `invalid duration "2x": unknown unit "x" (ns, us, ms, s, m, h, d, w)`,
		"fixed:2m:1m":    "backoff initial 2m0s is above max 1m0s",
		"fixed:1s:0":     "backoff max must be above 0 (for no delay set initial to 0)",
		"fixed:1s:1m:no": `unknown jitter "no" (full, equal or none)`,
	} {
		if _, err := parseBackoffSpec(in); err == nil || err.Error() != want {
			t.Errorf("parseBackoffSpec(%q) error = %v, want %q", in, err, want)
		}
	}
}

package agentcli

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseQuotaReset(t *testing.T) {
	utc := time.Date(2026, 3, 14, 10, 20, 0, 0, time.UTC)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	cases := []struct {
		text string
		now  time.Time
		want time.Time // zero: not ok
	}{
		{"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\n", utc, utc.Add(120 * time.Second)},
		{`{"error": "rate_limited", "retry-after": "30"}`, utc, utc.Add(30 * time.Second)},
		{"Rate limited. Please try again in 2h 30m.", utc, utc.Add(2*time.Hour + 30*time.Minute)},
		{"429: retry after 45 seconds", utc, utc.Add(45 * time.Second)},
		{"You've hit your usage limit. Try again in 1 day 3 hours 5 minutes.", utc, utc.Add(27*time.Hour + 5*time.Minute)},
		{`"retryDelay": "27s"`, utc, utc.Add(27 * time.Second)},
		{"Please retry in 27.5s.", utc, utc.Add(27500 * time.Millisecond)},
		{"Claude AI usage limit reached|1773487800", utc, time.Unix(1773487800, 0)},
		{"limit resets at 1773487800123 (ms)", utc, time.UnixMilli(1773487800123)},
		{"5-hour limit reached ∙ resets 3pm", utc, time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)},
		{"Usage limit reached, resets 15:00 (UTC)", utc, time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)},
		{"Usage limit reached, resets 9am", utc, time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC)},  // tomorrow: 9am has passed
		{"limit reached · resets 12am", utc, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)},      // midnight
		{"resets at 3:30 PM (America/New_York)", utc, time.Date(2026, 3, 14, 15, 30, 0, 0, ny)}, // 19:30 UTC
		{"resets at 3pm", utc.In(ny), time.Date(2026, 3, 14, 15, 0, 0, 0, ny)},                  // without a zone: the local clock
		{"Usage limit reached.", utc, time.Time{}},                                              // no time named
		{"Claude AI usage limit reached|1000000000", utc, time.Time{}},                          // a timestamp in the past is not a reset time
		{"try again in 30 days", utc, time.Time{}},                                              // past the 7-day bound
		{"Retry-After: 99999999", utc, time.Time{}},                                             // past the bound
		{"resets at 25:00", utc, time.Time{}},                                                   // not a time
		{"try again 3", utc, time.Time{}},                                                       // a bare number
		// gemini's daily quota: the next midnight in Los Angeles (UTC-7 on 14 March 2026), not
		// the per-minute delay its message also names
		{"TerminalQuotaError: You have exhausted your daily quota on this model.\n  message: 'You exceeded your current quota. Please retry in 20.0s.'", utc, time.Date(2026, 3, 15, 7, 0, 0, 0, time.UTC)},
		{"You have exhausted your daily quota on this model.", time.Date(2026, 3, 15, 6, 59, 0, 0, time.UTC), time.Date(2026, 3, 15, 7, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		got, ok := ParseQuotaReset(c.text, c.now)
		if c.want.IsZero() {
			if ok {
				t.Errorf("%q: got %v, want no reset time", c.text, got)
			}
			continue
		}
		if !ok || !got.Equal(c.want) {
			t.Errorf("%q: got %v (ok %v), want %v", c.text, got, ok, c.want)
		}
	}
}

// TestParseQuotaResetBounds: whatever the text, a parsed reset is never before now and never more
// than 7 days after it.
func TestParseQuotaResetBounds(t *testing.T) {
	words := []string{"in", "after", "resets", "at", "Retry-After:", "try again", "2h", "30m", "45", "seconds",
		"3pm", "15:00", "(UTC)", "(Europe/Berlin)", "1773487800", "1999999999", "12am", "9", "days", "|", "0",
		"99999999999", "1.5", "h", "min", "11:59", "pm", "1773487800123", "retryDelay\": \"", "s"}
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 3, 14, 10, 20, 0, 0, time.UTC)
	for i := 0; i < 20000; i++ {
		var text string
		for j := 0; j < 1+r.IntN(6); j++ {
			text += words[r.IntN(len(words))] + " "
		}
		now := base.Add(time.Duration(r.Int64N(int64(400 * 24 * time.Hour))))
		got, ok := ParseQuotaReset(text, now)
		if !ok {
			continue
		}
		if got.Before(now) || got.Sub(now) > MaxQuotaWait {
			t.Fatalf("%q at %v: reset %v is outside [now, now+7d]", text, now, got)
		}
	}
}

func FuzzParseQuotaReset(f *testing.F) {
	for _, s := range []string{"Retry-After: 120", "try again in 2h 30m", "resets 15:00 (UTC)", "usage limit reached|1773487800", "resets at 3pm"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 14, 10, 20, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseQuotaReset(s, now)
		if ok && (got.Before(now) || got.Sub(now) > MaxQuotaWait) {
			t.Fatalf("%q: %v outside the bounds", s, got)
		}
	})
}

func TestQuotaDefaultWait(t *testing.T) {
	t.Setenv("MULLIGAN_QUOTA_DEFAULT_WAIT", "")
	if got := QuotaDefaultWait(); got != DefaultQuotaWait {
		t.Errorf("default: %v", got)
	}
	t.Setenv("MULLIGAN_QUOTA_DEFAULT_WAIT", "90s")
	if got := QuotaDefaultWait(); got != 90*time.Second {
		t.Errorf("90s: %v", got)
	}
	t.Setenv("MULLIGAN_QUOTA_DEFAULT_WAIT", "nonsense")
	if got := QuotaDefaultWait(); got != DefaultQuotaWait {
		t.Errorf("nonsense: %v", got)
	}
}

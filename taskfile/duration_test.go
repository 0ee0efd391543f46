package taskfile

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"0":            0,
		"0s":           0,
		"90s":          90 * time.Second,
		"1h30m":        90 * time.Minute,
		"1.5h":         90 * time.Minute,
		".5s":          500 * time.Millisecond,
		"1d":           24 * time.Hour,
		"2w":           14 * 24 * time.Hour,
		"1w2d3h":       (9*24 + 3) * time.Hour,
		"1.5d":         36 * time.Hour,
		"300ms":        300 * time.Millisecond,
		"10us":         10 * time.Microsecond,
		"10µs":         10 * time.Microsecond,
		"7ns":          7,
		" 5m ":         5 * time.Minute,
		"2562047h":     2562047 * time.Hour,
		"15250w":       15250 * 7 * 24 * time.Hour,
		"1.000000001s": time.Second + 1,
	}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// Everything Go accepts (without a sign) means the same here.
	for _, in := range []string{"1h2m3s4ms5us6ns", "0.25h", "3.000000001s", "100000h"} {
		want, _ := time.ParseDuration(in)
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; Go says %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                       `invalid duration "": empty`,
		"5 minutes":              `invalid duration "5 minutes": unknown unit " minutes" (ns, us, ms, s, m, h, d, w)`,
		"30":                     `invalid duration "30": missing unit (ns, us, ms, s, m, h, d, w)`,
		"-5m":                    `invalid duration "-5m": negative durations are not allowed`,
		"+5m":                    `invalid duration "+5m": write it without a sign`,
		"5y":                     `invalid duration "5y": unknown unit "y" (ns, us, ms, s, m, h, d, w)`,
		"h":                      `invalid duration "h": expected a number with a unit, like 90s, 5m, 2h or 1d`,
		".s":                     `invalid duration ".s": a number is missing`,
		"99999999w":              `invalid duration "99999999w": too long`,
		"15251w":                 `invalid duration "15251w": too long`,
		"2562048h":               `invalid duration "2562048h": too long`,
		"99999999999999999999ns": `invalid duration "99999999999999999999ns": too long`,
		"1m-5s":                  `invalid duration "1m-5s": unknown unit "m-" (ns, us, ms, s, m, h, d, w)`,
	}
	for in, want := range bad {
		_, err := ParseDuration(in)
		if err == nil || err.Error() != want {
			t.Errorf("ParseDuration(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestParseDurationNeverNegative(t *testing.T) {
	// Sums of large parts must not wrap around into negative durations.
	for _, in := range []string{"15000w15000w", "2562047h2562047h", strings.Repeat("9", 30) + "s"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		}
	}
}

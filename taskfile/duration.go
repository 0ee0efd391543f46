package taskfile

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// durationUnits are Go's units plus days and weeks: task files talk about deadlines and
// gc ages ("2h", "30d") and people write days without thinking of them as 24h.
var durationUnits = map[string]uint64{
	"ns": uint64(time.Nanosecond),
	"us": uint64(time.Microsecond),
	"µs": uint64(time.Microsecond), // U+00B5
	"μs": uint64(time.Microsecond), // U+03BC
	"ms": uint64(time.Millisecond),
	"s":  uint64(time.Second),
	"m":  uint64(time.Minute),
	"h":  uint64(time.Hour),
	"d":  uint64(24 * time.Hour),
	"w":  uint64(7 * 24 * time.Hour),
}

var errDurationSyntax = errors.New("invalid duration")

// ParseDuration reads a duration the way time.ParseDuration does ("90s", "1h30m", "1.5h"),
// plus the units d (24h) and w (7d). "0" needs no unit. Signs are refused: a negative
// timeout or deadline is always a mistake, and "+" buys nothing.
func ParseDuration(s string) (time.Duration, error) {
	d, err := parseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: %w", s, err)
	}
	return d, nil
}

// FormatDuration writes d as a task file would: 30m, 2h, 1h30m, 200ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if s[0] == '-' {
		return 0, errors.New("negative durations are not allowed")
	}
	if s[0] == '+' {
		return 0, errors.New("write it without a sign")
	}
	if s == "0" {
		return 0, nil
	}
	var total uint64
	for s != "" {
		// Integer part.
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		intPart := s[:i]
		s = s[i:]
		// Fraction.
		var frac string
		if s != "" && s[0] == '.' {
			s = s[1:]
			j := 0
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			frac = s[:j]
			s = s[j:]
			if intPart == "" && frac == "" {
				return 0, errors.New("a number is missing")
			}
		} else if intPart == "" {
			return 0, errors.New("expected a number with a unit, like 90s, 5m, 2h or 1d")
		}
		// Unit.
		j := 0
		for j < len(s) && s[j] != '.' && (s[j] < '0' || s[j] > '9') {
			j++
		}
		unit := s[:j]
		s = s[j:]
		if unit == "" {
			return 0, errors.New("missing unit (ns, us, ms, s, m, h, d, w)")
		}
		mult, ok := durationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("unknown unit %q (ns, us, ms, s, m, h, d, w)", unit)
		}
		v, ok := mulAdd(intPart, frac, mult)
		if !ok || total+v < total || total+v > math.MaxInt64 {
			return 0, errors.New("too long")
		}
		total += v
	}
	return time.Duration(total), nil
}

// mulAdd returns intPart.frac × mult in nanoseconds, exact for the integer part and
// truncated for the fraction, reporting overflow instead of wrapping.
func mulAdd(intPart, frac string, mult uint64) (uint64, bool) {
	var n uint64
	for _, c := range intPart {
		if n > (math.MaxInt64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n != 0 && mult > math.MaxInt64/n {
		return 0, false
	}
	v := n * mult
	// The fraction: digits beyond what a nanosecond can hold are dropped, which keeps
	// the scale in range (mult ≤ 6.05e14 and scale ≤ 1e18 never overflow below).
	scale := 1.0
	var f uint64
	for _, c := range frac {
		if scale >= 1e18 {
			break
		}
		f = f*10 + uint64(c-'0')
		scale *= 10
	}
	if f != 0 {
		add := uint64(float64(f) * (float64(mult) / scale))
		if v+add < v || v+add > math.MaxInt64 {
			return 0, false
		}
		v += add
	}
	return v, true
}

package taskfile

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Backoff kinds and jitter modes, as written in the task file.
const (
	BackoffFixed       = "fixed"
	BackoffLinear      = "linear"
	BackoffExponential = "exponential"

	JitterFull  = "full"
	JitterEqual = "equal"
	JitterNone  = "none"

	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 5 * time.Minute
)

// Backoff is a task's delay policy between attempts. The loader fills every field; Delay
// still treats an empty Kind, Jitter or Max as the defaults so a zero Backoff is usable.
// A zero Initial is honoured (no delay), which is what tests and "retry at once" want.
type Backoff struct {
	Kind         string // fixed | linear | exponential (default)
	Initial, Max time.Duration
	Jitter       string // full (default) | equal | none
}

// DefaultBackoff is the policy of a task that says nothing about backoff.
func DefaultBackoff() Backoff {
	return Backoff{Kind: BackoffExponential, Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, Jitter: JitterFull}
}

// Delay is the wait before retry k (k ≥ 1; smaller k counts as 1): the kind's base delay
// capped at Max, then jittered, then raised to at least retryAfter (the failure's own
// demand wins over our guess). rnd returns a float64 in [0,1); nil means math/rand.
func (b Backoff) Delay(k int, retryAfter time.Duration, rnd func() float64) time.Duration {
	if k < 1 {
		k = 1
	}
	maxD := b.Max
	if maxD <= 0 {
		maxD = DefaultBackoffMax
	}
	init := max(b.Initial, 0)
	var d time.Duration
	switch b.Kind {
	case BackoffFixed:
		d = init
	case BackoffLinear:
		// initial·k, compared before multiplying so a huge k cannot wrap.
		if init != 0 && time.Duration(k) > maxD/init {
			d = maxD
		} else {
			d = init * time.Duration(k)
		}
	default: // exponential
		// initial·2^(k-1) by doubling until the cap: at most 63 steps whatever k is.
		d = init
		for i := 1; i < k && d > 0 && d < maxD; i++ {
			d *= 2
			if d < 0 { // d < maxD < 2^63, so 2d < 2^64 and an overflow shows as negative
				d = maxD
			}
		}
	}
	d = min(d, maxD)

	if rnd == nil {
		rnd = rand.Float64
	}
	switch b.Jitter {
	case JitterNone:
	case JitterEqual:
		half := d / 2
		d = half + scaleDuration(d-half, rnd())
	default: // full
		d = scaleDuration(d, rnd())
	}
	return max(d, retryAfter)
}

// scaleDuration returns d·r for r in [0,1), clamping a misbehaving r so the result stays in [0,d].
func scaleDuration(d time.Duration, r float64) time.Duration {
	if !(r > 0) { // also NaN
		return 0
	}
	if r >= 1 {
		return d
	}
	v := time.Duration(float64(d) * r)
	return min(max(v, 0), d)
}

// parseBackoffSpec reads the --backoff flag: KIND[:INITIAL[:MAX[:JITTER]]], e.g.
// "exponential:1s:5m" or "fixed:2s". Missing parts keep their defaults.
func parseBackoffSpec(s string) (Backoff, error) {
	b := DefaultBackoff()
	parts := strings.Split(s, ":")
	if len(parts) > 4 {
		return b, fmt.Errorf("%q has too many parts: use KIND[:INITIAL[:MAX[:JITTER]]], like exponential:1s:5m", s)
	}
	kind := parts[0]
	if !isBackoffKind(kind) {
		return b, fmt.Errorf("unknown backoff kind %q (fixed, linear or exponential)", kind)
	}
	b.Kind = kind
	if kind == BackoffFixed {
		b.Jitter = JitterNone // a fixed delay is fixed unless a jitter is given
	}
	maxSet := false
	for i, p := range parts[1:] {
		switch i {
		case 0, 1:
			d, err := ParseDuration(p)
			if err != nil {
				return b, err
			}
			if i == 0 {
				b.Initial = d
			} else {
				b.Max, maxSet = d, true
			}
		case 2:
			if !isJitter(p) {
				return b, fmt.Errorf("unknown jitter %q (full, equal or none)", p)
			}
			b.Jitter = p
		}
	}
	return b, finishBackoff(&b, maxSet)
}

// finishBackoff checks a backoff whose fields are parsed. An initial above the default max
// raises the max when no max was given, so "fixed:10m" means ten minutes, not five.
func finishBackoff(b *Backoff, maxSet bool) error {
	if !maxSet {
		b.Max = max(DefaultBackoffMax, b.Initial)
		return nil
	}
	if b.Max == 0 {
		return fmt.Errorf("backoff max must be above 0 (for no delay set initial to 0)")
	}
	if b.Initial > b.Max {
		return fmt.Errorf("backoff initial %s is above max %s", b.Initial, b.Max)
	}
	return nil
}

func isBackoffKind(s string) bool {
	return s == BackoffFixed || s == BackoffLinear || s == BackoffExponential
}

func isJitter(s string) bool { return s == JitterFull || s == JitterEqual || s == JitterNone }

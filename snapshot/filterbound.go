package snapshot

import "context"

type filterBoundKey struct{}

// WithFilterBound returns ctx carrying bound: the clean and smudge filters that WriteTree,
// Snapshot and Restore start under the returned context are stopped (with everything they
// started) when bound is done, even though ctx itself may never be cancelled. The runner takes a
// cancelled attempt's snapshot under a context that ignores the cancel — that tree must be kept —
// and bounds only the filters, so a clean filter that hangs cannot hold the run forever.
func WithFilterBound(ctx, bound context.Context) context.Context {
	return context.WithValue(ctx, filterBoundKey{}, bound)
}

// filterContext is the context filters run under: ctx, also ended when its filter bound is.
func filterContext(ctx context.Context) (context.Context, context.CancelFunc) {
	bound, _ := ctx.Value(filterBoundKey{}).(context.Context)
	if bound == nil {
		return ctx, func() {}
	}
	fctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(bound, func() { cancel(context.Cause(bound)) })
	return fctx, func() {
		stop()
		cancel(nil)
	}
}

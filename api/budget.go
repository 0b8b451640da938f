package api

import (
	"context"
	"fmt"
)

// KindResponseTooLarge: a result would take the response past the server's
// limit (serve --max-response-bytes).
const KindResponseTooLarge = "response_too_large"

// KindBatchTooLarge: a batch holds more than MaxBatch calls.
const KindBatchTooLarge = "batch_too_large"

// responseBudget is what is left of one HTTP response's size limit. The
// calls of a batch run one after another, so it needs no lock.
type responseBudget struct{ left, limit int64 }

type budgetKey struct{}

// take charges n bytes of a method's result, or refuses them.
func (b *responseBudget) take(method string, n int64) *Error {
	if b == nil {
		return nil
	}
	if n > b.left {
		return b.tooLarge(method, n)
	}
	b.left -= n
	return nil
}

// fits reports, before a result is built, whether n bytes of it would be
// refused; methods whose results carry bytes check it before encoding them.
func (b *responseBudget) fits(method string, n int64) *Error {
	if b == nil || n <= b.left {
		return nil
	}
	return b.tooLarge(method, n)
}

func (b *responseBudget) tooLarge(method string, n int64) *Error {
	return newError(CodeDomain, KindResponseTooLarge, fmt.Sprintf(
		"the result of %s (%d bytes) would take the response past its limit of %d bytes (%d left); read large blobs in parts with offset and length, or split the batch",
		method, n, b.limit, b.left))
}

func budgetOf(ctx context.Context) *responseBudget {
	b, _ := ctx.Value(budgetKey{}).(*responseBudget)
	return b
}

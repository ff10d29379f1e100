package bigquery

import (
	"errors"
	"testing"

	"google.golang.org/api/googleapi"
)

// TestTransientBigQueryErrors: what the sink retries and what it reports at
// once.
func TestTransientBigQueryErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&googleapi.Error{Code: 400, Message: "failed to add job: database table is locked: projects, jobInternalError"}, true},
		{&googleapi.Error{Code: 400, Message: "Syntax error, invalidQuery"}, false},
		{&googleapi.Error{Code: 503, Message: "backendError"}, true},
		{&googleapi.Error{Code: 403, Message: "rateLimitExceeded"}, true},
		{&googleapi.Error{Code: 403, Message: "accessDenied"}, false},
		{errors.New("could not serialize access to table x due to concurrent update"), true},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

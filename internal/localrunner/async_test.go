package localrunner

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

func TestCheckAsync(t *testing.T) {
	async, endpoint := *jobopts.Async, *jobopts.Endpoint
	t.Cleanup(func() { *jobopts.Async, *jobopts.Endpoint = async, endpoint })
	for _, tc := range []struct {
		async            bool
		runner, endpoint string
		refused          bool
	}{
		{true, "", "", true},
		{true, "prism", "", true},
		{true, "prism", "localhost:8099", false},
		{true, "flink", "", false},
		{true, "dataflow", "", false},
		{false, "prism", "", false},
	} {
		*jobopts.Async, *jobopts.Endpoint = tc.async, tc.endpoint
		if err := CheckAsync("launch", tc.runner); (err != nil) != tc.refused {
			t.Errorf("async %v, runner %q, endpoint %q: %v, want refused %v", tc.async, tc.runner, tc.endpoint, err, tc.refused)
		}
	}
}

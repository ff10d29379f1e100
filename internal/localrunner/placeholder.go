package localrunner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/protobuf/proto"
)

// placeholderPrefix names the empty file the SDK stages as a LOOPBACK job's
// worker binary and never removes (runnerlib.Execute, Beam v2.77.0).
const placeholderPrefix = "beamloopbackworker-"

// RemovePlaceholder removes the loopback placeholder of the ended job jobID
// on the job service at endpoint and returns its path ("": none). The job's
// pipeline names the file, so only this job's placeholder goes, never
// another process's; a file that is not empty (a worker binary) stays. What
// it cannot remove it logs, at debug level.
func RemovePlaceholder(ctx context.Context, endpoint, jobID string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	path, err := Placeholder(ctx, endpoint, jobID)
	if err == nil && path != "" && emptyFile(path) {
		err = os.Remove(path)
	} else {
		path = ""
	}
	if err != nil {
		slog.Debug("the loopback placeholder was not removed", "job", jobID, "err", err)
		return ""
	}
	return path
}

// RemoveJobPlaceholder is RemovePlaceholder for a job this process
// submitted with its own flags (--endpoint, --environment_type): nothing
// unless the job ran in loopback.
func RemoveJobPlaceholder(ctx context.Context, jobID string) {
	if jobopts.IsLoopback() {
		RemovePlaceholder(ctx, *jobopts.Endpoint, jobID)
	}
}

// emptyFile reports an empty regular file (not a link, not a folder).
func emptyFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// Placeholder is the path of the job's loopback placeholder, as its
// pipeline names it (the Go environment's file artifact), whether or not
// the file is still there ("": the job staged none).
func Placeholder(ctx context.Context, endpoint, jobID string) (string, error) {
	if endpoint == "" || jobID == "" {
		return "", nil
	}
	conn, err := grpcx.Dial(ctx, endpoint, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("placeholder: %w", err)
	}
	defer conn.Close()
	resp, err := jobpb.NewJobServiceClient(conn).GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: jobID})
	if err != nil {
		return "", fmt.Errorf("placeholder: job %s: %w", jobID, err)
	}
	for _, env := range resp.GetPipeline().GetComponents().GetEnvironments() {
		for _, dep := range env.GetDependencies() {
			if path := placeholderOf(dep); path != "" {
				return path, nil
			}
		}
	}
	return "", nil
}

// placeholderOf is the path dep stages when it names a loopback
// placeholder: a file artifact named placeholderPrefix* in os.TempDir().
func placeholderOf(dep *pipepb.ArtifactInformation) string {
	if dep.GetTypeUrn() != graphx.URNArtifactFileType {
		return ""
	}
	var file pipepb.ArtifactFilePayload
	if proto.Unmarshal(dep.GetTypePayload(), &file) != nil {
		return ""
	}
	path := file.GetPath()
	if filepath.Dir(path) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(path), placeholderPrefix) {
		return ""
	}
	return path
}

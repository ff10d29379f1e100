// Package gcs serves gs:// paths to internal/files: importing it registers Beam's
// GCS filesystem and the ranged reads and not-found errors of
// files.ReadRanges. Binaries import it for that side effect; transforms and
// pipeline do not, so they link no GCS client (testing/deps checks it).
package gcs

import (
	"context"
	"errors"
	"io"

	"cloud.google.com/go/storage"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs" // gs://
)

func init() { files.RegisterStore("gs", files.Store{Ranges: ranges, NotExist: notExist}) }

func ranges(ctx context.Context, bucket, object string) (func(model.LineRef) (io.ReadCloser, error), error) {
	c, err := files.Client("gs ranges", func() (*storage.Client, error) { return storage.NewClient(context.Background()) })
	if err != nil {
		return nil, err
	}
	o := c.Bucket(bucket).Object(object)
	return func(r model.LineRef) (io.ReadCloser, error) {
		return o.NewRangeReader(ctx, r.Offset, int64(r.Length))
	}, nil
}

func notExist(err error) bool {
	return errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist)
}

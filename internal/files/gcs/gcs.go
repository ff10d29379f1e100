// Package gcs serves gs:// paths to internal/files: importing it registers Beam's
// GCS filesystem, the ranged reads and not-found errors of files.ReadRanges
// and the listings of files.ListAfter. Binaries import it for that side
// effect; transforms and pipeline do not, so they link no GCS client
// (testing/deps checks it).
package gcs

import (
	"context"
	"errors"
	"io"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"google.golang.org/api/iterator"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs" // gs://
)

func init() {
	files.RegisterStore("gs", files.Store{Ranges: ranges, ListFrom: listFrom, NotExist: notExist})
}

func client() (*storage.Client, error) {
	return files.Client("gs store", func() (*storage.Client, error) { return storage.NewClient(context.Background()) })
}

func ranges(ctx context.Context, bucket, object string) (func(model.LineRef) (io.ReadCloser, error), error) {
	c, err := client()
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

// listFrom lists with startOffset (inclusive: start is skipped), names
// only, in one request for up to 999 names; the delimiter folds what lies
// deeper into prefixes, which are skipped.
func listFrom(ctx context.Context, bucket, prefix, start string, limit int) ([]string, error) {
	c, err := client()
	if err != nil {
		return nil, err
	}
	q := &storage.Query{Prefix: prefix, Delimiter: "/", StartOffset: start}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, err
	}
	var names []string
	it := c.Bucket(bucket).Objects(ctx, q)
	it.PageInfo().MaxSize = limit + 1
	for len(names) < limit {
		o, err := it.Next()
		if err == iterator.Done {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		if name := strings.TrimPrefix(o.Name, prefix); name != "" && o.Name != start {
			names = append(names, name)
		}
	}
	return names, nil
}

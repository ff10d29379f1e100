// Package gcs serves gs:// paths to io/files: importing it registers
// Beam's GCS filesystem (list, stream, write, remove) and the ranged reads
// and not-found errors of files.ReadRanges (files.RegisterStore).
//
// A binary that reads or writes gs:// paths imports it for that side
// effect (app/launch, app/reconcile, app/advise, app/report, and
// testing/gcstest for the tests); its workers are the same binary, so they
// serve gs:// too. transforms and pipeline do not import it, so they link
// no GCS client (testing/deps checks it).
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/revenue-stream/hourly/io/files"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs" // gs://
)

func init() { files.RegisterStore("gs", files.Store{Ranges: ranges, NotExist: notExist}) }

func ranges(ctx context.Context, path string) (func(files.Range) ([]byte, error), error) {
	c, err := files.Client("gs", func() (*storage.Client, error) { return storage.NewClient(context.Background()) })
	if err != nil {
		return nil, err
	}
	bucket, object, ok := strings.Cut(strings.TrimPrefix(path, "gs://"), "/")
	if !ok {
		return nil, fmt.Errorf("read %s: not an object path", path)
	}
	o := c.Bucket(bucket).Object(object)
	return func(r files.Range) ([]byte, error) {
		rr, err := o.NewRangeReader(ctx, r.Offset, int64(r.Length))
		if err != nil {
			return nil, err
		}
		defer rr.Close()
		b := make([]byte, r.Length)
		if _, err := io.ReadFull(rr, b); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}, nil
}

func notExist(err error) bool {
	return errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist)
}

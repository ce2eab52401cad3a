package ctrd

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// blobFetcher serves data for every descriptor.
type blobFetcher string

func (f blobFetcher) Fetch(context.Context, ocispec.Descriptor) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(f))), nil
}

func TestFetchBounded(t *testing.T) {
	const data = "a signature"
	d := digest.FromString(data)
	for _, tc := range []struct {
		name   string
		served string
		desc   ocispec.Descriptor
		limit  int64
		want   string // in the error; "" read
	}{
		{name: "within bounds", served: data, desc: ocispec.Descriptor{Digest: d, Size: int64(len(data))}, limit: 100},
		{name: "larger than the limit", served: data, desc: ocispec.Descriptor{Digest: d, Size: int64(len(data))}, limit: 5, want: "more than 5"},
		{name: "other content", served: "a forgery!!", desc: ocispec.Descriptor{Digest: d, Size: int64(len(data))}, limit: 100, want: "does not match"},
		{name: "more than its size", served: data + "...", desc: ocispec.Descriptor{Digest: d, Size: int64(len(data))}, limit: 100, want: "does not match"},
		{name: "less than its size", served: data[:4], desc: ocispec.Descriptor{Digest: d, Size: int64(len(data))}, limit: 100, want: "does not match"},
		{name: "no digest", served: data, desc: ocispec.Descriptor{Digest: "sha256:zz", Size: int64(len(data))}, limit: 100, want: "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fetchBounded(context.Background(), blobFetcher(tc.served), tc.desc, tc.limit)
			switch {
			case tc.want == "" && (err != nil || string(got) != data):
				t.Fatalf("fetchBounded = %q, %v; want %q", got, err, data)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("fetchBounded = %q, %v; want an error saying %q", got, err, tc.want)
			}
		})
	}
}

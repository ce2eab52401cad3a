package ctrd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/engine"
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

// TestCheckLayers: an attachment's layers are bounded before any is
// fetched: their number, each one's size and all of them together.
func TestCheckLayers(t *testing.T) {
	layers := func(n int, size int64) []ocispec.Descriptor {
		out := make([]ocispec.Descriptor, n)
		for i := range out {
			out[i] = ocispec.Descriptor{Digest: digest.FromString(fmt.Sprint(i)), Size: size}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		layers []ocispec.Descriptor
		want   string // in the error; "" allowed
	}{
		{"none", nil, ""},
		{"one signature", layers(1, 1500), ""},
		{"the most layers", layers(engine.MaxAttachmentLayers, 1500), ""},
		{"too many layers", layers(engine.MaxAttachmentLayers+1, 1500), "more than 64"},
		{"a layer too large", layers(1, engine.MaxAttachmentLayer+1), "more than 4194304"},
		{"a negative size", layers(1, -1), "-1 bytes"},
		{"four at the layer limit", layers(4, engine.MaxAttachmentLayer), ""},
		{"five at the layer limit: too much together", layers(5, engine.MaxAttachmentLayer), "together, more than 16777216"},
	} {
		err := checkLayers(tc.layers)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

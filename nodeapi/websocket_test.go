package nodeapi

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

func TestEndStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want metav1.Status
	}{
		{"success", nil, metav1.Status{Status: metav1.StatusSuccess}},
		{"an exit code", utilexec.CodeExitError{Err: errors.New("command terminated with exit code 3"), Code: 3}, metav1.Status{
			Status: metav1.StatusFailure, Reason: "NonZeroExitCode",
			Message: "command terminated with non-zero exit code: command terminated with exit code 3",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: "3"}}},
		}},
		{"another error", errors.New("container gone"), metav1.Status{
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError,
			Message: "Internal error occurred: container gone", Code: 500,
		}},
	} {
		if got := endStatus(tc.err); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestDecodeSizes: each JSON size the client sends, in order, until the
// stream ends (a malformed one ends it too).
func TestDecodeSizes(t *testing.T) {
	sizes := make(chan remotecommand.TerminalSize)
	go decodeSizes(context.Background(), strings.NewReader(`{"Width":80,"Height":24}{"Width":100,"Height":30} {"Width":`), sizes)
	var got []remotecommand.TerminalSize
	for sz := range sizes {
		got = append(got, sz)
	}
	want := []remotecommand.TerminalSize{{Width: 80, Height: 24}, {Width: 100, Height: 30}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

package nodeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"
)

// v5Protocol is the WebSocket remote command protocol kubectl asks for
// first (since 1.30): v4's channels and status, and a signal that closes
// one stream, so that the end of stdin reaches the command. The CRI
// streaming server speaks up to v4; the kubelet serves v5 by translating
// it to SPDY towards that server.
const v5Protocol = "v5.channel.k8s.io"

// The channels of a remote command over WebSocket.
const (
	stdinChannel = iota
	stdoutChannel
	stderrChannel
	errorChannel
	resizeChannel
)

// streamFunc runs an exec or an attach on a request's streams.
type streamFunc func(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error

// serveV5 serves the streams opts asks for over WebSocket v5, runs fn on
// them, and writes how it ended on the error channel as v4 does (a
// metav1.Status; a non-zero exit is NonZeroExitCode with the code as its
// ExitCode cause).
func (s *Server) serveV5(w http.ResponseWriter, r *http.Request, opts *remotecommand.Options, fn streamFunc) {
	channel := func(want bool, t wsstream.ChannelType) wsstream.ChannelType {
		if want {
			return t
		}
		return wsstream.IgnoreChannel
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{v5Protocol: {Binary: true, Channels: []wsstream.ChannelType{
		stdinChannel:  channel(opts.Stdin, wsstream.ReadChannel),
		stdoutChannel: channel(opts.Stdout, wsstream.WriteChannel),
		stderrChannel: channel(opts.Stderr, wsstream.WriteChannel),
		errorChannel:  wsstream.WriteChannel,
		resizeChannel: wsstream.ReadChannel,
	}}})
	conn.SetIdleTimeout(streamIdleTimeout)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		s.log.Warn("node API: WebSocket upgrade", "path", r.URL.Path, "err", err)
		return
	}
	defer conn.Close()
	// As the CRI streaming server: an empty message on the first channel
	// the client reads says the streams are up.
	switch {
	case opts.Stdout:
		_, _ = streams[stdoutChannel].Write(nil)
	case opts.Stderr:
		_, _ = streams[stderrChannel].Write(nil)
	default:
		_, _ = streams[errorChannel].Write(nil)
	}
	var in io.Reader
	var out, errw io.WriteCloser
	if opts.Stdin {
		in = streams[stdinChannel]
	}
	if opts.Stdout {
		out = streams[stdoutChannel]
	}
	if opts.Stderr {
		errw = streams[stderrChannel]
	}
	var resize chan remotecommand.TerminalSize
	if opts.TTY {
		resize = make(chan remotecommand.TerminalSize)
		go decodeSizes(r.Context(), streams[resizeChannel], resize)
	}
	st, err := json.Marshal(endStatus(fn(r.Context(), in, out, errw, opts.TTY, resize)))
	if err == nil {
		_, err = streams[errorChannel].Write(st)
	}
	if err != nil {
		s.log.Debug("node API: writing a stream's status", "path", r.URL.Path, "err", err)
	}
}

// decodeSizes passes the terminal sizes the client sends (JSON, one after
// the other) on, until the stream or ctx ends.
func decodeSizes(ctx context.Context, r io.Reader, sizes chan<- remotecommand.TerminalSize) {
	defer close(sizes)
	d := json.NewDecoder(r)
	for {
		var sz remotecommand.TerminalSize
		if err := d.Decode(&sz); err != nil {
			return
		}
		select {
		case sizes <- sz:
		case <-ctx.Done():
			return
		}
	}
}

// endStatus is how a command ended, as the remote command protocol v4
// reports it.
func endStatus(err error) metav1.Status {
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return metav1.Status{Status: metav1.StatusSuccess}
	case errors.As(err, &exit) && exit.Exited():
		return metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", exit),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
				Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(exit.ExitStatus()),
			}}},
		}
	default:
		return metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  metav1.StatusReasonInternalError,
			Message: fmt.Sprintf("Internal error occurred: %v", err),
			Code:    http.StatusInternalServerError,
		}
	}
}

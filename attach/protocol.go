// Package attach is `podrun attach`'s client of the stream keeper (keeper
// package), which holds the streams of a container that has stdin or a
// terminal, and the wire between them.
package attach

// The frames a keeper sends to a client: a byte naming the stream, a
// 32-bit big-endian length, the data.
const (
	FrameStdout byte = 1
	FrameStderr byte = 2
	MaxFrame         = 32 << 10
)

// FlagStdin is the bit of a client's first byte that says it sends stdin.
const FlagStdin byte = 1

// SocketFile is the keeper's socket in a container's directory.
const SocketFile = "attach.sock"

package logs

import "bytes"

// WriteRecords writes whole records (each ending in a newline) in as few
// writes as the rotation allows: the records that fit under MaxSize in one
// write, the one that does not fit to a new file (Write rotates before a
// record that would take the file over MaxSize).
func (r *File) WriteRecords(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p
		if r.rot.MaxSize > 0 && r.size+int64(len(p)) > r.rot.MaxSize {
			room := max(r.rot.MaxSize-r.size, 0)
			if i := bytes.LastIndexByte(p[:min(int64(len(p)), room)], '\n'); i >= 0 {
				chunk = p[:i+1] // the records that fit
			} else if i := bytes.IndexByte(p, '\n'); i >= 0 {
				chunk = p[:i+1] // the first one, to a new file
			}
		}
		n, err := r.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[len(chunk):]
	}
	return written, nil
}

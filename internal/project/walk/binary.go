package walk

import "bytes"

// BinarySniffBytes is how much of a file's start IsBinary inspects.
const BinarySniffBytes = 8 << 10

// IsBinary reports whether a file whose content starts with head is binary:
// a NUL byte within its first BinarySniffBytes bytes. head may be longer or
// shorter than BinarySniffBytes.
func IsBinary(head []byte) bool {
	if len(head) > BinarySniffBytes {
		head = head[:BinarySniffBytes]
	}
	return bytes.IndexByte(head, 0) >= 0
}

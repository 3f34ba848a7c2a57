package occurrence

import "bytes"

// What HeapBytes charges, in bytes of heap, for each byte of a body and for each value
// it can start. A decoded object is a map, whose first group of eight places takes
// about 300 bytes however few members it has; a list, a member or an element takes a
// slot, a boxed value and its growth. TestHeapBytesCoverTheHeap decodes the bodies
// that cost the most per byte and checks these are not below what the heap grew by.
const (
	// perByte covers the body itself and what evaluating an occurrence copies of it:
	// its strings, the canonical JSON of a tool call's arguments, a transformed
	// content and the answer that returns it.
	perByte   = 4
	perObject = 448
	perList   = 128
	// perValue is charged for each ',' and ':', one per element or member beyond a
	// container's first.
	perValue = 80
)

// HeapBytes is an upper estimate of the heap the occurrence in body takes while it is
// decoded and evaluated: at most about 50 times its length for a body of tiny objects
// or numbers, about 4 times for one that is mostly a string (content). It reads every
// byte once, counting the characters that start a value, those in strings included,
// which can only raise it.
func HeapBytes(body []byte) int64 {
	n := int64(perByte) * int64(len(body))
	n += perObject * int64(bytes.Count(body, []byte{'{'}))
	n += perList * int64(bytes.Count(body, []byte{'['}))
	n += perValue * int64(bytes.Count(body, []byte{','})+bytes.Count(body, []byte{':'}))
	return n
}

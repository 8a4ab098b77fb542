package evstream_test

import (
	"fmt"

	"github.com/vkjobs/vkjobs/evstream"
)

// Event types of a hypothetical physics system.
const (
	Collision evstream.Type = 1
	Sleep     evstream.Type = 2
)

// CollisionEvent is a plain struct: no pointers, so it can live in a stream.
type CollisionEvent struct {
	Actors [2]uint32
	Where  [3]float32
	_      uint32
}

func Example() {
	// The producer owns a fixed buffer, allocated once.
	w := evstream.NewWriter(evstream.NewBuffer(1024))
	ev := CollisionEvent{Actors: [2]uint32{3, 9}, Where: [3]float32{1, 0, 2}}
	_ = evstream.Put(w, Collision, &ev)
	_ = w.Append(Sleep, []byte{3})
	_ = w.Append(99, []byte("a type this consumer does not know"))
	ev.Actors = [2]uint32{4, 5}
	_ = evstream.Put(w, Collision, &ev)

	// A consumer handles collisions only and skips everything else.
	r := evstream.NewReader(w.Bytes())
	for r.Next() {
		switch r.Type() {
		case Collision:
			c, err := evstream.View[CollisionEvent](r.Payload())
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("collision %v at %v (offset %d)\n", c.Actors, c.Where, r.Offset())
		default:
			// not ours
		}
	}
	if err := r.Err(); err != nil {
		fmt.Println(err)
	}

	// A damaged stream is an error naming the offset, never a panic.
	bad := w.Bytes()[:w.Len()-3]
	r = evstream.NewReader(bad)
	for r.Next() {
	}
	fmt.Println(r.Err())
	// Output:
	// collision [3 9] at [1 0 2] (offset 0)
	// collision [4 5] at [1 0 2] (offset 96)
	// evstream: truncated stream at byte offset 96: payload runs past the end (type 1, size 24)
}

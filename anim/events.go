package anim

// Event kinds stored with clips. Consumers skip kinds they do not know.
const (
	EventFootDown uint16 = 1 // a foot (bone) starts touching the ground
	EventFootUp   uint16 = 2 // a foot (bone) leaves the ground
)

// Event is a timed marker in a clip (e.g. a footstep), stored in the blob.
type Event struct {
	Time float32 // seconds from the clip start
	Type uint16
	Bone uint16
}

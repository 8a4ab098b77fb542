// Package repocheck holds tests of the repository as a whole: every
// reference a tracked document or Go comment makes to a file resolves to a
// file in the repository, nothing sends readers outside it (to a folder
// beside the repository, or to notes a clone does not have), and the version
// is stated where users look for it. It has no code of its own.
package repocheck

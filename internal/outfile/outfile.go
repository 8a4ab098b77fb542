// Package outfile writes the commands' output files so that a failure
// leaves no partial file behind and an existing file as it was, and
// checks before any work starts that a file can be written at all (a
// command that compresses for a minute and then finds its output
// directory missing has lost the minute).
//
// A regular file (or a new one) is written to a temporary file in the
// same directory, then renamed over the target, so a reader sees the old
// file or the new one, never half of one. Anything else (a device, a
// pipe, a link to one) is written in place: renaming over it would
// replace it. Rejected: writing in place and truncating on failure (the
// old file is gone either way), and a temporary file in os.TempDir (a
// rename across file systems is not atomic, and fails).
package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Check fails when file cannot be written (a directory, a missing
// directory, no permission), without leaving a file behind when it did
// not exist.
func Check(file string) error {
	if _, err := os.Stat(file); err == nil {
		f, err := os.OpenFile(file, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(file)
}

// Write writes file with write (see the package doc); a new or replaced
// regular file gets mode 0644. The error names the file.
func Write(file string, write func(io.Writer) error) error {
	if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		return nil
	}
	dir, base := filepath.Split(file)
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// WriteBytes is Write of data.
func WriteBytes(file string, data []byte) error {
	return Write(file, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

package pinning

// pinSupported tells the tests whether this OS can pin threads (pin_linux.go).
const pinSupported = true

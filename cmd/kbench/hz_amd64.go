package main

// addChain runs n iterations of 8 dependent adds (hz_amd64.s) and returns
// 8n.
//
//go:noescape
func addChain(n int64) int64

const haveAddChain = true

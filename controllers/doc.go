// Package controllers holds the manager's reconcilers: one per kind, each
// reading as "fetch → ordered phases → one status write". The manager never
// runs turns and never writes the dispatcher's part of a status.
package controllers

// Package localobjects owns the ConfigMaps and Secrets of a standalone node:
// read from files (by the sources package) instead of an API server,
// defaulted and validated as the API server would, kept in a Store that
// serves them to volumes, container environments and image pulls (the same
// interfaces podinputs implements from the API server) and tells
// subscribers which objects changed.
// Invariants: the Store only holds objects that passed Validate; an object's
// UID and creationTimestamp are kept while it exists; a subscriber hears of
// every change in content, never of a relist that changed nothing.
package localobjects

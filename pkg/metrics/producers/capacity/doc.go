// Package capacity is the arithmetic behind the reservedCapacity and pendingCapacity
// producers: what a pod reserves on a node, how much of a group of nodes is reserved,
// which pending pods a node shape could run and how many such nodes they need. It is pure:
// callers pass the nodes and pods they read, and get numbers back.
package capacity

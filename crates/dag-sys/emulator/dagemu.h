/*
 * dagemu.h: controls of tracekit's software DAG card (dagemu.c), for tests only.
 *
 * The software card implements the functions of ../include/dagapi_min.h. It is set up
 * when a device is opened, from environment variables, or from options given here per
 * device (which take precedence, so that tests in one process do not share settings):
 *
 *   DAGEMU_INPUT=FILE.erf   what the card receives: the records of an uncompressed ERF
 *                           file, played once (unset: nothing arrives)
 *   DAGEMU_END=1            after the last record has been read, dag_advance_stream()
 *                           fails with errno ENODATA (a real card idles instead)
 *   DAGEMU_RX_STREAMS=N     receive streams 0, 2, ..., 2N-2, fed by a symmetric hash of
 *                           the IPv4/IPv6 address pair (default 1); as many transmit
 *                           streams 1, 3, ..., 2N-1
 *   DAGEMU_RATE=PPS         records arrive at this rate whatever the reader does; a
 *                           record that finds its stream's buffer full (or its stream
 *                           not started) is dropped and counted in the lctr of the next
 *                           record (not of a colour type) on that stream. Unset: the
 *                           card waits for room, and nothing is lost.
 *   DAGEMU_BUFFER=BYTES     size of each stream's ring (default 4 MiB, rounded up to
 *                           whole pages)
 *   DAGEMU_TX_LOG=FILE      the records committed to transmit streams, appended in
 *                           commit order
 */
#ifndef TRACEKIT_DAGEMU_H
#define TRACEKIT_DAGEMU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Sets option `name` (one of the DAGEMU_* names above) for the device at `device`,
 * overriding the environment at the next dag_open(); a NULL value removes it. Returns 0,
 * or -1 with errno (ENOMEM when the option table is full). */
int dagemu_set_option(const char *device, const char *name, const char *value);

/** Records the card dropped on a receive stream since it was opened. */
uint64_t dagemu_stream_drops(int dagfd, int stream_num);

/** Records the card received (read from DAGEMU_INPUT and put into a stream or dropped) so far. */
uint64_t dagemu_records_received(int dagfd);

#ifdef __cplusplus
}
#endif

#endif

/*
 * dagapi_min.h: the part of the Endace DAG API that tracekit calls, declared by tracekit.
 *
 * Written for tracekit from the documented signatures, as the open-source callers use
 * them (libtrace's format_dag25.c, libpcap's pcap-dag.c); it is not the vendor's
 * dagapi.h and holds nothing of it. Only what tracekit needs is declared. On a host
 * with the vendor SDK, build dag-sys with `--features libdag` and compare these
 * declarations with the SDK's (crates/dag-sys/regen.sh explains how).
 *
 * Streams: even numbers receive, odd numbers transmit. A receive stream is a window
 * over the card's ring: dag_advance_stream() hands back the memory below *bottom and
 * returns the new top; records between bottom and top are whole and contiguous (the
 * driver maps the ring twice, so a record never wraps).
 */
#ifndef TRACEKIT_DAGAPI_MIN_H
#define TRACEKIT_DAGAPI_MIN_H

#include <stdint.h>
#include <sys/time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Sizes of stream memory: mindata, window and reservation sizes. */
typedef uint64_t dag_size_t;
/** A size or -1 on error. */
typedef int64_t dag_ssize_t;

/** dag_set_mode(): receive on a transmit-numbered stream or the reverse (vDAG). */
#define DAG_REVERSE_MODE 1

/** The flags byte of an ERF record header, least significant bit first. */
typedef struct flags {
    uint8_t iface : 2;   /** capture interface (low two bits) */
    uint8_t vlen : 1;    /** variable-length record */
    uint8_t trunc : 1;   /** truncated: the card ran out of buffer */
    uint8_t rxerror : 1; /** receive (physical layer) error */
    uint8_t dserror : 1; /** data-stream error */
    uint8_t reserved : 1;
    uint8_t direction : 1;
} flags_t;

/** The 16-byte ERF record header as the card writes it (multi-byte fields: ts
 * little-endian, rlen/lctr/wlen big-endian); extension headers and the payload follow. */
typedef struct dag_record {
    uint64_t ts;   /** 32.32 fixed-point seconds since 1970 */
    uint8_t type;  /** record type; bit 7: extension headers follow */
    flags_t flags;
    uint16_t rlen; /** whole record length */
    uint16_t lctr; /** records lost before this one (colour in colour types) */
    uint16_t wlen; /** length on the wire */
} dag_record_t;

/** Card: open by device path (/dev/dagN), returning a descriptor; -1 and errno on error. */
int dag_open(char *dagname);
/** Closes a card opened by dag_open(). */
int dag_close(int dagfd);
/** Legacy configuration string, e.g. "varlen slen=96". */
int dag_configure(int dagfd, char *params);
/** Sets a stream's mode (DAG_REVERSE_MODE: the other direction than its number says). */
int dag_set_mode(int dagfd, int stream_num, int mode);
/** How many receive streams the card has. */
int dag_rx_get_stream_count(int dagfd);
/** How many transmit streams the card has. */
int dag_tx_get_stream_count(int dagfd);

/* Streams. */
/** Attaches a stream's memory to this process (transmit: with an extra window so that a
 * reservation never wraps). */
int dag_attach_stream64(int dagfd, int stream_num, uint32_t flags, uint64_t extra_window_size);
/** Detaches a stopped stream. */
int dag_detach_stream(int dagfd, int stream_num);
/** Starts a stream: records flow from now on. */
int dag_start_stream(int dagfd, int stream_num);
/** Stops a stream. */
int dag_stop_stream(int dagfd, int stream_num);
/** dag_advance_stream() returns once `mindata` bytes are available or `maxwait` passed,
 * looking every `poll`. */
int dag_set_stream_poll64(int dagfd, int stream_num, dag_size_t mindata,
                          struct timeval *maxwait, struct timeval *poll);
/** Reads back the poll settings. */
int dag_get_stream_poll64(int dagfd, int stream_num, dag_size_t *mindata,
                          struct timeval *maxwait, struct timeval *poll);
/** Releases the memory below *bottom (NULL: nothing yet), waits per the poll settings
 * and returns the top of the window; NULL and errno on error. */
uint8_t *dag_advance_stream(int dagfd, int stream_num, uint8_t **bottom);
/** Size of a stream's memory. */
dag_ssize_t dag_get_stream_buffer_size64(int dagfd, int stream_num);
/** Bytes in a stream's memory not yet handed back (receive) or sent (transmit). */
dag_ssize_t dag_get_stream_buffer_level64(int dagfd, int stream_num);

/* Transmit: reserve contiguous space, write whole ERF records, commit them. */
/** Reserves `size` contiguous bytes of a transmit stream; returns where to write them. */
uint8_t *dag_tx_get_stream_space64(int dagfd, int stream_num, dag_size_t size);
/** Sends the first `size` reserved bytes, which must be whole records; returns the next
 * write position. */
uint8_t *dag_tx_stream_commit_records64(int dagfd, int stream_num, dag_size_t size);

#ifdef __cplusplus
}
#endif

#endif

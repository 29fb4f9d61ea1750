/*
 * dagemu.c: tracekit's software DAG card.
 *
 * It implements the DAG API of ../include/dagapi_min.h as the API documents it and as
 * libtrace and libpcap rely on it, so that tracekit's DAG code runs unchanged against
 * it: even streams receive, odd streams transmit; each stream's ring is mapped twice
 * back to back, so a record is always contiguous in a window; dag_advance_stream()
 * publishes whole records only and honours the poll settings; a card thread plays the
 * records of an ERF file (DAGEMU_INPUT) into the receive streams, steering each by a
 * symmetric hash of its address pair, dropping (and counting in lctr) what does not fit
 * when paced (the count goes into the lctr of the stream's next record); committed transmit records go to a log file. Settings: dagemu.h.
 */
#define _GNU_SOURCE
#include "../include/dagapi_min.h"
#include "dagemu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEVICES 16
#define MAX_RX_STREAMS 16
#define MAX_STREAMS (2 * MAX_RX_STREAMS)
#define MAX_OPTIONS 256
#define DEFAULT_BUFFER (4u << 20)
#define ERF_HEADER 16

struct stream {
    int attached;
    int started;
    int ever_started;
    uint8_t *base; /* ring of `size` bytes, mapped at base and again at base + size */
    size_t size;
    /* Receive: bytes published by the card and bytes handed back by the reader.
     * Transmit: bytes committed. Absolute counts; the ring offset is `% size`. The
     * card's and the reader's fields sit on cache lines of their own. */
    _Alignas(64) _Atomic uint64_t head;
    _Alignas(64) _Atomic uint64_t tail;
    _Atomic uint64_t wake_at; /* a waiting reader wants to be woken when head reaches it */
    uint64_t reader_top; /* receive: the top last returned to the reader */
    dag_size_t mindata;
    struct timeval maxwait;
    struct timeval poll;
    pthread_cond_t data; /* a reader waits here for records */
    _Atomic int reader_waiting;
    uint32_t pending_loss; /* card thread only: drops not yet reported in an lctr */
    _Atomic uint64_t drops;
};

struct device {
    char path[PATH_MAX];
    int fd;
    pthread_mutex_t lock;
    pthread_cond_t room; /* the card thread waits here for ring space or a start */
    _Atomic int card_waiting;
    int rx_streams;
    size_t buffer;
    double rate;
    int end;
    unsigned slen; /* 0: whole records */
    uint8_t *input;
    size_t input_len;
    char tx_log_path[PATH_MAX];
    FILE *tx_log;
    pthread_t card;
    int card_running;
    _Atomic int card_done;
    _Atomic int closing;
    _Atomic uint64_t received;
    struct stream streams[MAX_STREAMS];
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct device *devices[MAX_DEVICES];

static struct {
    char device[PATH_MAX];
    char name[32];
    char *value;
} options[MAX_OPTIONS];
static int option_count;

int dagemu_set_option(const char *device, const char *name, const char *value)
{
    if (!device || !name || strlen(device) >= PATH_MAX || strlen(name) >= 32) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&table_lock);
    int slot = -1;
    for (int i = 0; i < option_count; i++) {
        if (strcmp(options[i].device, device) == 0 && strcmp(options[i].name, name) == 0) {
            slot = i;
        }
    }
    if (slot < 0 && value) {
        if (option_count == MAX_OPTIONS) {
            pthread_mutex_unlock(&table_lock);
            errno = ENOMEM;
            return -1;
        }
        slot = option_count++;
        strcpy(options[slot].device, device);
        strcpy(options[slot].name, name);
        options[slot].value = NULL;
    }
    if (slot >= 0) {
        free(options[slot].value);
        options[slot].value = value ? strdup(value) : NULL;
    }
    pthread_mutex_unlock(&table_lock);
    return 0;
}

/* An option for `device`: its own setting, else the environment's. Called with
 * table_lock held; the result is copied before it is released. */
static const char *option(const char *device, const char *name)
{
    for (int i = 0; i < option_count; i++) {
        if (options[i].value && strcmp(options[i].device, device) == 0 &&
            strcmp(options[i].name, name) == 0) {
            return options[i].value;
        }
    }
    return getenv(name);
}

static struct device *find(int fd)
{
    struct device *d = NULL;
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (devices[i] && devices[i]->fd == fd) {
            d = devices[i];
        }
    }
    pthread_mutex_unlock(&table_lock);
    if (!d) {
        errno = EBADF;
    }
    return d;
}

static struct stream *stream_of(struct device *d, int stream_num)
{
    if (stream_num < 0 || stream_num >= 2 * d->rx_streams) {
        errno = EINVAL;
        return NULL;
    }
    return &d->streams[stream_num];
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static int is_colour(uint8_t type)
{
    switch (type & 0x7f) {
    case 10: case 11: case 15: case 16: case 17: case 19: case 20:
        return 1;
    default:
        return 0;
    }
}

static int is_ethernet(uint8_t type)
{
    switch (type & 0x7f) {
    case 2: case 11: case 16: case 20:
        return 1;
    default:
        return 0;
    }
}

/* Header and extension headers of a record, or 0 when they do not fit in it. */
static size_t framing(const uint8_t *rec, size_t rlen)
{
    size_t f = ERF_HEADER;
    int more = rec[8] & 0x80;
    while (more) {
        if (f + 8 > rlen) {
            return 0;
        }
        more = rec[f] & 0x80;
        f += 8;
    }
    return f;
}

static uint64_t deadline_after(const struct timeval *tv)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec +
           (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Waits on `cond` (device lock held) until `at` (monotonic ns). */
static void wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t at)
{
    struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
    pthread_cond_timedwait(cond, lock, &ts);
}

/* FNV-1a over an address. */
static uint32_t address_hash(const uint8_t *a, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ a[i]) * 16777619u;
    }
    return h;
}

/* The receive stream (index among the receive streams) a record goes to: a symmetric
 * hash of its IPv4 or IPv6 address pair (after any VLAN tags), as a card's load
 * balancing does; records without one go to the first stream. */
static int steer(const struct device *d, const uint8_t *rec, size_t rlen)
{
    if (d->rx_streams <= 1) {
        return 0;
    }
    size_t f = framing(rec, rlen);
    uint16_t wlen = be16(rec + 14);
    if (f == 0) {
        return 0;
    }
    const uint8_t *p = rec + f;
    size_t left = rlen - f;
    int version = 0;
    if (is_ethernet(rec[8])) {
        if (left < 2 + 14) {
            return 0;
        }
        p += 2;
        left -= 2;
        if (left > wlen) {
            left = wlen;
        }
        size_t at = 12;
        uint16_t ethertype = be16(p + at);
        while ((ethertype == 0x8100 || ethertype == 0x88a8 || ethertype == 0x9100) &&
               at + 6 <= left) {
            at += 4;
            ethertype = be16(p + at);
        }
        at += 2;
        if (at > left) {
            return 0;
        }
        p += at;
        left -= at;
        version = ethertype == 0x0800 ? 4 : ethertype == 0x86dd ? 6 : 0;
    } else if ((rec[8] & 0x7f) == 22 || (rec[8] & 0x7f) == 23) {
        version = (rec[8] & 0x7f) == 22 ? 4 : 6;
    }
    uint32_t h;
    if (version == 4 && left >= 20 && (p[0] >> 4) == 4) {
        h = address_hash(p + 12, 4) ^ address_hash(p + 16, 4);
    } else if (version == 6 && left >= 40 && (p[0] >> 4) == 6) {
        h = address_hash(p + 8, 16) ^ address_hash(p + 24, 16);
    } else {
        return 0;
    }
    h *= 0x9e3779b1u;
    return (int)((h >> 16) % (uint32_t)d->rx_streams);
}

/* The card received `rec`: into stream `s`, or dropped and counted. */
static void receive(struct device *d, struct stream *s, const uint8_t *rec, size_t rlen)
{
    size_t keep = rlen;
    size_t f = framing(rec, rlen);
    if (d->slen && f) {
        size_t snapped = f + (is_ethernet(rec[8]) ? 2 : 0) + d->slen;
        if (snapped < rlen) {
            keep = snapped;
        }
    }
    size_t stored = (keep + 7) & ~(size_t)7;
    if (stored > rlen) {
        stored = rlen;
    }
    for (;;) {
        if (atomic_load(&d->closing)) {
            return;
        }
        uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
        int started = __atomic_load_n(&s->started, __ATOMIC_ACQUIRE);
        /* The ring exists once the stream started (and `started` is published after
         * it): only then may its size be read. */
        if (started && s->size - (head - tail) >= stored) {
            break;
        }
        if (d->rate > 0 || (s->ever_started && !started) || (started && stored > s->size)) {
            if (s->pending_loss < UINT32_MAX) {
                s->pending_loss++;
            }
            atomic_fetch_add(&s->drops, 1);
            return;
        }
        /* Unpaced: wait for room (or for the stream to start). */
        pthread_mutex_lock(&d->lock);
        atomic_store(&d->card_waiting, 1);
        head = atomic_load(&s->head);
        tail = atomic_load(&s->tail);
        if (!(s->started && s->size - (head - tail) >= stored) && !atomic_load(&d->closing)) {
            wait_until(&d->room, &d->lock, now_ns() + 50000000u);
        }
        atomic_store(&d->card_waiting, 0);
        pthread_mutex_unlock(&d->lock);
    }
    uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint8_t *dst = s->base + head % s->size;
    memcpy(dst, rec, keep);
    memset(dst + keep, 0, stored - keep);
    if (stored != rlen) {
        put_be16(dst + 10, (uint16_t)stored);
        dst[9] |= 0x04; /* varying length */
    }
    if (!is_colour(rec[8]) && s->pending_loss) {
        uint32_t lctr = be16(dst + 12) + s->pending_loss;
        put_be16(dst + 12, lctr > 0xffff ? 0xffff : (uint16_t)lctr);
        s->pending_loss = 0;
    }
    atomic_store(&s->head, head + stored);
    /* Wake a waiting reader once it has what it waits for, not at every record. */
    if (atomic_load(&s->reader_waiting) && head + stored >= atomic_load(&s->wake_at)) {
        pthread_mutex_lock(&d->lock);
        pthread_cond_broadcast(&s->data);
        pthread_mutex_unlock(&d->lock);
    }
}

/* The card: plays the input's records once into the receive streams. */
static void *card(void *arg)
{
    struct device *d = arg;
    size_t off = 0;
    uint64_t n = 0;
    uint64_t t0 = now_ns();
    while (off + ERF_HEADER <= d->input_len && !atomic_load(&d->closing)) {
        const uint8_t *rec = d->input + off;
        size_t rlen = be16(rec + 10);
        if (rlen < ERF_HEADER || rlen > d->input_len - off) {
            break; /* damaged input: the wire goes quiet */
        }
        off += rlen;
        if (d->rate > 0) {
            uint64_t at = t0 + (uint64_t)((double)n * 1e9 / d->rate);
            uint64_t now = now_ns();
            if (at > now) {
                struct timespec ts = {(time_t)((at - now) / 1000000000u),
                                      (long)((at - now) % 1000000000u)};
                nanosleep(&ts, NULL);
            }
        }
        n++;
        if ((rec[8] & 0x7f) != 48) { /* padding is not traffic */
            receive(d, &d->streams[2 * steer(d, rec, rlen)], rec, rlen);
        }
        atomic_store_explicit(&d->received, n, memory_order_release); /* delivered or dropped */
    }
    atomic_store(&d->card_done, 1);
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < 2 * d->rx_streams; i += 2) {
        pthread_cond_broadcast(&d->streams[i].data);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static int load_input(struct device *d, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    d->input_len = (size_t)st.st_size;
    d->input = malloc(d->input_len ? d->input_len : 1);
    size_t got = 0;
    while (d->input && got < d->input_len) {
        ssize_t r = read(fd, d->input + got, d->input_len - got);
        if (r <= 0) {
            d->input_len = got;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (!d->input) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Is `dev` a DAG device path, /dev/dagN? */
static int is_dag_path(const char *dev)
{
    const char *p = dev;
    if (strncmp(p, "/dev/dag", 8) != 0 || !p[8]) {
        return 0;
    }
    for (p += 8; *p; p++) {
        if (*p < '0' || *p > '9') {
            return 0;
        }
    }
    return 1;
}

int dag_open(char *dagname)
{
    if (!dagname || !is_dag_path(dagname) || strlen(dagname) >= PATH_MAX) {
        errno = ENOENT;
        return -1;
    }
    pthread_mutex_lock(&table_lock);
    int slot = -1;
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (devices[i] && strcmp(devices[i]->path, dagname) == 0) {
            pthread_mutex_unlock(&table_lock);
            errno = EBUSY;
            return -1;
        }
        if (!devices[i] && slot < 0) {
            slot = i;
        }
    }
    if (slot < 0) {
        pthread_mutex_unlock(&table_lock);
        errno = EMFILE;
        return -1;
    }
    struct device *d = calloc(1, sizeof *d);
    if (!d) {
        pthread_mutex_unlock(&table_lock);
        errno = ENOMEM;
        return -1;
    }
    strcpy(d->path, dagname);
    const char *v;
    d->rx_streams = (v = option(dagname, "DAGEMU_RX_STREAMS")) ? atoi(v) : 1;
    if (d->rx_streams < 1 || d->rx_streams > MAX_RX_STREAMS) {
        pthread_mutex_unlock(&table_lock);
        free(d);
        errno = EINVAL;
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long buffer = (v = option(dagname, "DAGEMU_BUFFER")) ? strtoull(v, NULL, 10)
                                                                       : DEFAULT_BUFFER;
    if (buffer < (unsigned long long)page) {
        buffer = (unsigned long long)page;
    }
    d->buffer = (size_t)((buffer + (unsigned long long)page - 1) / (unsigned long long)page *
                         (unsigned long long)page);
    d->rate = (v = option(dagname, "DAGEMU_RATE")) ? strtod(v, NULL) : 0;
    d->end = (v = option(dagname, "DAGEMU_END")) && strcmp(v, "1") == 0;
    if ((v = option(dagname, "DAGEMU_TX_LOG")) && strlen(v) < PATH_MAX) {
        strcpy(d->tx_log_path, v);
    }
    char input[PATH_MAX] = "";
    if ((v = option(dagname, "DAGEMU_INPUT")) && strlen(v) < PATH_MAX) {
        strcpy(input, v);
    }
    pthread_mutex_unlock(&table_lock);

    if (input[0] && load_input(d, input) < 0) {
        int e = errno;
        free(d);
        errno = e;
        return -1;
    }
    d->fd = memfd_create("dagemu-card", MFD_CLOEXEC);
    if (d->fd < 0) {
        int e = errno;
        free(d->input);
        free(d);
        errno = e;
        return -1;
    }
    pthread_mutex_init(&d->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&d->room, &attr);
    for (int i = 0; i < MAX_STREAMS; i++) {
        struct stream *s = &d->streams[i];
        pthread_cond_init(&s->data, &attr);
        s->mindata = ERF_HEADER;
        s->maxwait = (struct timeval){0, 100000};
        s->poll = (struct timeval){0, 1000};
    }
    pthread_condattr_destroy(&attr);

    pthread_mutex_lock(&table_lock);
    if (devices[slot]) { /* taken meanwhile: find another */
        slot = -1;
        for (int i = 0; i < MAX_DEVICES; i++) {
            if (!devices[i] && slot < 0) {
                slot = i;
            }
        }
    }
    if (slot < 0) {
        pthread_mutex_unlock(&table_lock);
        close(d->fd);
        free(d->input);
        free(d);
        errno = EMFILE;
        return -1;
    }
    devices[slot] = d;
    pthread_mutex_unlock(&table_lock);
    return d->fd;
}

static void unmap(struct stream *s)
{
    if (s->base) {
        munmap(s->base, 2 * s->size);
        s->base = NULL;
    }
}

int dag_close(int dagfd)
{
    struct device *d = find(dagfd);
    if (!d) {
        return -1;
    }
    atomic_store(&d->closing, 1);
    pthread_mutex_lock(&d->lock);
    pthread_cond_broadcast(&d->room);
    for (int i = 0; i < MAX_STREAMS; i++) {
        d->streams[i].started = 0;
        pthread_cond_broadcast(&d->streams[i].data);
    }
    pthread_mutex_unlock(&d->lock);
    if (d->card_running) {
        pthread_join(d->card, NULL);
    }
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (devices[i] == d) {
            devices[i] = NULL;
        }
    }
    pthread_mutex_unlock(&table_lock);
    for (int i = 0; i < MAX_STREAMS; i++) {
        unmap(&d->streams[i]);
        pthread_cond_destroy(&d->streams[i].data);
    }
    if (d->tx_log) {
        fclose(d->tx_log);
    }
    pthread_cond_destroy(&d->room);
    pthread_mutex_destroy(&d->lock);
    close(d->fd);
    free(d->input);
    free(d);
    return 0;
}

int dag_configure(int dagfd, char *params)
{
    struct device *d = find(dagfd);
    if (!d) {
        return -1;
    }
    if (!params) {
        errno = EINVAL;
        return -1;
    }
    const char *slen = strstr(params, "slen=");
    if (slen) {
        d->slen = (unsigned)strtoul(slen + 5, NULL, 10);
    }
    return 0;
}

int dag_set_mode(int dagfd, int stream_num, int mode)
{
    struct device *d = find(dagfd);
    if (!d || !stream_of(d, stream_num)) {
        return -1;
    }
    if (mode != 0) {
        errno = ENOTSUP; /* the software card has no reverse (vDAG) mode */
        return -1;
    }
    return 0;
}

int dag_rx_get_stream_count(int dagfd)
{
    struct device *d = find(dagfd);
    return d ? d->rx_streams : -1;
}

int dag_tx_get_stream_count(int dagfd)
{
    struct device *d = find(dagfd);
    return d ? d->rx_streams : -1;
}

/* Maps a ring of `size` bytes twice, back to back. */
static int map_ring(struct stream *s, size_t size)
{
    int fd = memfd_create("dagemu-stream", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (ftruncate(fd, (off_t)size) < 0) {
        goto fail_fd;
    }
    uint8_t *area = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) {
        goto fail_fd;
    }
    for (int half = 0; half < 2; half++) {
        void *at = mmap(area + half * size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                        fd, 0);
        if (at == MAP_FAILED) {
            int e = errno;
            munmap(area, 2 * size);
            close(fd);
            errno = e;
            return -1;
        }
    }
    close(fd);
    s->base = area;
    s->size = size;
    return 0;
fail_fd: {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}
}

int dag_attach_stream64(int dagfd, int stream_num, uint32_t flags, uint64_t extra_window_size)
{
    (void)flags;
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    if (s->attached) {
        pthread_mutex_unlock(&d->lock);
        errno = EBUSY;
        return -1;
    }
    size_t size = d->buffer;
    if (stream_num % 2 == 1) {
        /* A transmit reservation can be as large as the extra window. */
        long page = sysconf(_SC_PAGESIZE);
        if (extra_window_size > size) {
            size = (size_t)((extra_window_size + (uint64_t)page - 1) / (uint64_t)page *
                            (uint64_t)page);
        }
        if (!d->tx_log && d->tx_log_path[0]) {
            d->tx_log = fopen(d->tx_log_path, "ab");
            if (!d->tx_log) {
                int e = errno;
                pthread_mutex_unlock(&d->lock);
                errno = e;
                return -1;
            }
        }
    }
    if (!s->base && map_ring(s, size) < 0) {
        int e = errno;
        pthread_mutex_unlock(&d->lock);
        errno = e;
        return -1;
    }
    s->attached = 1;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

int dag_detach_stream(int dagfd, int stream_num)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    int ok = s->attached && !s->started;
    if (ok) {
        s->attached = 0;
    }
    pthread_mutex_unlock(&d->lock);
    if (!ok) {
        errno = s->started ? EBUSY : EINVAL;
        return -1;
    }
    return 0;
}

int dag_start_stream(int dagfd, int stream_num)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    if (!s->attached || s->started) {
        pthread_mutex_unlock(&d->lock);
        errno = s->started ? EBUSY : EINVAL;
        return -1;
    }
    __atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
    s->ever_started = 1;
    int rc = 0;
    if (stream_num % 2 == 0 && !d->card_running) {
        if (pthread_create(&d->card, NULL, card, d) == 0) {
            d->card_running = 1;
        } else {
            __atomic_store_n(&s->started, 0, __ATOMIC_RELEASE);
            errno = EAGAIN;
            rc = -1;
        }
    }
    pthread_cond_broadcast(&d->room);
    pthread_mutex_unlock(&d->lock);
    return rc;
}

int dag_stop_stream(int dagfd, int stream_num)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    int was = s->started;
    __atomic_store_n(&s->started, 0, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->data);
    pthread_cond_broadcast(&d->room);
    if (d->tx_log) {
        fflush(d->tx_log);
    }
    pthread_mutex_unlock(&d->lock);
    if (!was) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int dag_set_stream_poll64(int dagfd, int stream_num, dag_size_t mindata, struct timeval *maxwait,
                          struct timeval *poll)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    if (!maxwait || !poll) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    s->mindata = mindata;
    s->maxwait = *maxwait;
    s->poll = *poll;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

int dag_get_stream_poll64(int dagfd, int stream_num, dag_size_t *mindata,
                          struct timeval *maxwait, struct timeval *poll)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    if (!mindata || !maxwait || !poll) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    *mindata = s->mindata;
    *maxwait = s->maxwait;
    *poll = s->poll;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

uint8_t *dag_advance_stream(int dagfd, int stream_num, uint8_t **bottom)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return NULL;
    }
    if (stream_num % 2 == 1 || !bottom || !s->attached) {
        errno = EINVAL;
        return NULL;
    }
    uint64_t tail = atomic_load(&s->tail);
    if (*bottom) {
        /* Hand back everything below *bottom; it may lie in the second mapping. */
        if (*bottom < s->base || *bottom > s->base + 2 * s->size) {
            errno = EINVAL;
            return NULL;
        }
        uint64_t at = tail - tail % s->size + (uint64_t)(*bottom - s->base);
        if (at < tail || at > s->reader_top) {
            errno = EINVAL;
            return NULL;
        }
        atomic_store(&s->tail, at);
        tail = at;
        if (atomic_load(&d->card_waiting)) {
            pthread_mutex_lock(&d->lock);
            pthread_cond_broadcast(&d->room);
            pthread_mutex_unlock(&d->lock);
        }
    }
    pthread_mutex_lock(&d->lock);
    dag_size_t mindata = s->mindata;
    struct timeval maxwait = s->maxwait;
    struct timeval poll = s->poll;
    pthread_mutex_unlock(&d->lock);
    int forever = maxwait.tv_sec == 0 && maxwait.tv_usec == 0;
    uint64_t deadline = deadline_after(&maxwait);
    uint64_t head;
    for (;;) {
        /* `card_done` is set after the card's last record, so read it first. */
        if (d->end && atomic_load(&d->card_done) && atomic_load(&s->head) == tail) {
            s->reader_top = tail;
            *bottom = s->base + tail % s->size;
            errno = ENODATA;
            return NULL;
        }
        head = atomic_load(&s->head);
        if (head - tail >= mindata) {
            break;
        }
        if (!__atomic_load_n(&s->started, __ATOMIC_ACQUIRE) || atomic_load(&d->closing)) {
            break;
        }
        int done = atomic_load(&d->card_done);
        if (done && d->end) {
            head = atomic_load(&s->head);
            break; /* the rest of the input, though less than mindata (or the end, next) */
        }
        uint64_t now = now_ns();
        if (!forever && now >= deadline) {
            break;
        }
        uint64_t wake = deadline_after(&poll);
        if (poll.tv_sec == 0 && poll.tv_usec == 0) {
            wake = now + 1000000u;
        }
        if (!forever && wake > deadline) {
            wake = deadline;
        }
        pthread_mutex_lock(&d->lock);
        atomic_store(&s->wake_at, tail + (mindata ? mindata : 1));
        atomic_store(&s->reader_waiting, 1);
        if (atomic_load(&s->head) == head && s->started && !(done && d->end)) {
            wait_until(&s->data, &d->lock, wake);
        }
        atomic_store(&s->reader_waiting, 0);
        pthread_mutex_unlock(&d->lock);
    }
    s->reader_top = head;
    *bottom = s->base + tail % s->size;
    return *bottom + (head - tail);
}

dag_ssize_t dag_get_stream_buffer_size64(int dagfd, int stream_num)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    return s->base ? (dag_ssize_t)s->size : (dag_ssize_t)d->buffer;
}

dag_ssize_t dag_get_stream_buffer_level64(int dagfd, int stream_num)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return -1;
    }
    if (stream_num % 2 == 1) {
        return 0; /* the wire takes committed records at once */
    }
    return (dag_ssize_t)(atomic_load(&s->head) - atomic_load(&s->tail));
}

static struct stream *tx_stream(int dagfd, int stream_num, struct device **dev)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    if (!s) {
        return NULL;
    }
    if (stream_num % 2 == 0 || !s->started) {
        errno = EINVAL;
        return NULL;
    }
    *dev = d;
    return s;
}

uint8_t *dag_tx_get_stream_space64(int dagfd, int stream_num, dag_size_t size)
{
    struct device *d;
    struct stream *s = tx_stream(dagfd, stream_num, &d);
    if (!s) {
        return NULL;
    }
    if (size > s->size) {
        errno = ENOMEM;
        return NULL;
    }
    return s->base + atomic_load(&s->head) % s->size;
}

uint8_t *dag_tx_stream_commit_records64(int dagfd, int stream_num, dag_size_t size)
{
    struct device *d;
    struct stream *s = tx_stream(dagfd, stream_num, &d);
    if (!s) {
        return NULL;
    }
    if (size > s->size) {
        errno = EINVAL;
        return NULL;
    }
    uint64_t head = atomic_load(&s->head);
    const uint8_t *p = s->base + head % s->size;
    /* Only whole records may be committed. */
    dag_size_t at = 0;
    while (at < size) {
        if (size - at < ERF_HEADER) {
            errno = EINVAL;
            return NULL;
        }
        uint16_t rlen = be16(p + at + 10);
        if (rlen < ERF_HEADER || rlen > size - at) {
            errno = EINVAL;
            return NULL;
        }
        at += rlen;
    }
    pthread_mutex_lock(&d->lock);
    if (d->tx_log && size && fwrite(p, 1, (size_t)size, d->tx_log) != size) {
        int e = errno;
        pthread_mutex_unlock(&d->lock);
        errno = e ? e : EIO;
        return NULL;
    }
    pthread_mutex_unlock(&d->lock);
    atomic_store(&s->head, head + size);
    return s->base + (head + size) % s->size;
}

uint64_t dagemu_stream_drops(int dagfd, int stream_num)
{
    struct device *d = find(dagfd);
    struct stream *s = d ? stream_of(d, stream_num) : NULL;
    return s ? atomic_load(&s->drops) : 0;
}

uint64_t dagemu_records_received(int dagfd)
{
    struct device *d = find(dagfd);
    return d ? atomic_load(&d->received) : 0;
}

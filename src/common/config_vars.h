/* The one configuration table: every GCOMM_* environment variable, declared once.
 * X(field, type, default, description). type is LEVEL, INT, SIZE or STRING. The variable name is
 * "GCOMM_" followed by the field name in upper case; docs/CONFIG.md is generated from this list
 * by `gcomm_info --config-markdown`. */
#define GCOMMI_CONFIG_VARS(X)                                                                  \
    X(log_level, LEVEL, "warn",                                                                \
      "What gcomm prints: none, error, warn, info, debug (also every failing call with "       \
      "file:line) or trace")                                                                   \
    X(log_file, STRING, "",                                                                    \
      "File that log messages are appended to; empty means standard error. %p in the name "    \
      "is replaced by the process id")                                                         \
    X(pack_stream_min, SIZE, "0",                                                             \
      "CPU pack and unpack operations of at least this many bytes write large blocks with "    \
      "streaming stores (x86 with AVX2); 0 chooses, on Intel, half the L2 size of CPU 0 (from "  \
      "sysfs); elsewhere 8M for unpacking and max(8M, L3 size of CPU 0 / 16) for packing; "    \
      "from this size a pack on AMD with AVX-512 also moves 128-byte rows with 64-byte "       \
      "vectors")                                                                               \
    X(pack_cpu, STRING, "auto",                                                               \
      "Whose loops the CPU datatype engine uses (x86): auto (those of the CPU it runs on), "    \
      "zen4, amd (other AMD), intel (other x86 with AVX2) or generic (no vector loops); one "   \
      "whose instructions the CPU lacks (AVX2; zen4 also AVX-512) is refused with a warning. "  \
      "For tests of every CPU's loops on one machine, and for comparing them")                 \
    X(type_max_nodes, SIZE, "4M",                                                             \
      "Largest normal form a datatype commit builds, in nodes of about 80 bytes: a struct "     \
      "that mixes differently shaped member types at every level of a deep nesting grows "     \
      "exponentially, and its commit is refused with GCOMM_ERR_UNSUPPORTED past this (0: no "  \
      "limit)")                                                                                \
    X(pack_max_blocks, INT, "0",                                                               \
      "Most thread blocks a GPU pack, unpack or copy kernel uses (so it can run beside a user "  \
      "kernel); 0 chooses 16 per multiprocessor")                                              \
    X(timeout_ms, INT, "60000",                                                               \
      "Every wait of a gcomm_launch kernel (notifications, barriers, queue credits) gives up "  \
      "after this many milliseconds, and the launch reports what each rank was waiting for")    \
    X(queue_depth, INT, "64",                                                                 \
      "Notifications in flight from one GPU to one rank before its senders wait for credit "   \
      "(rounded up to a power of two)")                                                        \
    X(inline_max, INT, "8",                                                                   \
      "A put_notify of at most this many bytes (0..8) to a rank of a GPU this one reaches "    \
      "with loads and stores carries its payload inside the notification, with no fence: it "  \
      "orders only its own data before the notification (0: every notified put releases "      \
      "everything the block wrote before it)")                                                 \
    X(pending_max, INT, "1024",                                                               \
      "Notifications a rank holds that arrived but match none of its waits yet; beyond, the "  \
      "queues apply back-pressure")                                                            \
    X(devices, STRING, "",                                                                    \
      "CUDA devices gcomm drives, e.g. \"0,1\": all of them in a single process; under "      \
      "gcomm_init_mpi, process k of a node takes the (k mod n)-th of the list. Empty: every "  \
      "visible device; none: no GPU (host ranks only, also on a node with GPUs)")              \
    X(proxy_depth, INT, "1024",                                                               \
      "Commands a proxy ring holds before its producers wait for credit, and commands the "    \
      "proxy carries out at once (rounded up to a power of two)")                              \
    X(proxy_chunk, SIZE, "512K",                                                              \
      "Puts and gets between processes larger than this move through the proxy in pieces of "  \
      "this size, pipelined through its bounce buffers")                                       \
    X(proxy_bounce, INT, "8",                                                                 \
      "Bounce buffers of GCOMM_PROXY_CHUNK bytes the proxy keeps for sending, and as many for " \
      "receiving")                                                                             \
    X(force_proxy, INT, "0",                                                                  \
      "Under gcomm_init_mpi, treat every N consecutive processes as one node, as if the others " \
      "were on other nodes: their GPUs are then reached through the proxy over MPI, not CUDA " \
      "IPC (1: every other process; 0: the real nodes). Processes of different pretend nodes " \
      "may share a GPU")


"""Column indices of the packet kernel's state tables (layer L3).

The compiled kernel keeps its state in a few 2-D numpy tables (links, flows, packets) instead of
dozens of arrays; these module-level integers name the columns. numba freezes module globals as
compile-time constants, so the names cost nothing at run time.
"""

from __future__ import annotations

# --- event kinds (low 4 bits of an event key; the rest is the argument) ---
EV_START = 0  # flow arg starts (its sender NIC is kicked)
EV_TXDONE = 1  # link arg finished serialising its packet
EV_ARRIVE = 2  # packet arg fully received at its link's downstream node
EV_PAUSE_ON = 3  # XOFF for link arg reaches the link's upstream end
EV_PAUSE_OFF = 4  # XON for link arg reaches the upstream end
EV_CREDIT = 5  # one buffer credit of link arg returns to its upstream end
EV_CNP = 6  # a CNP for flow arg reaches its sender
EV_ACK = 7  # the ACK of packet arg (with its INT records) reaches the sender
EV_WAKE = 8  # host arg's NIC re-checks its flows (pacing or a rate-increase timer is due)
EV_RETX = 9  # the dropped packet arg is declared lost at its sender (retransmission timeout)
EV_SAMPLE = 10  # time-series sample
EV_NACK = 11  # the receiver's NACK reaches the sender: go-back-N's for flow arg (an out-of-sequence packet
# arrived), selective repeat's naming the chain of lost packets that starts at packet arg
EV_TRIM_NACK = 12  # trimming: the NACK of trimmed packet arg (its header reached the receiver) reaches the sender
EV_PULL = 13  # RCCC: receiver host arg's credit pacer grants its next MTU of credit
EV_GRANT = 14  # RCCC: one MTU of credit reaches flow arg's sender
EV_BITS = 4
CTRL_ACK = 15  # PI_CTRL of a plain ACK: it only takes its bytes back to the sender (no event there)

# --- link integer table LI[links, :] ---
MAX_CLASSES = 8  # traffic classes (priorities) of data packets; per-class columns are blocks of this many
LI_SRC = 0  # upstream node
LI_DST = 1  # downstream node
LI_SRC_HOST = 2  # host index of the upstream node, -1 for a switch
LI_DST_HOST = 3  # host index of the downstream node, -1 for a switch
LI_BUSY = 4  # 1 while a packet is being serialised
LI_TXPKT = 5  # the packet being serialised
LI_PAUSE_FRAMES = 6  # XOFF frames sent for this link (received by its upstream end), all classes
LI_CREDITS = 7  # free buffer slots (packets) at the downstream end, credit mode
LI_CLASS = 8  # 0 host->switch, 1 switch->host, 2 switch->switch (the link class, not a traffic class)
LI_CQHEAD = 9  # first queued control packet (strict priority over the data FIFOs; -1 if empty)
LI_CQTAIL = 10
LI_REV = 11  # the link in the opposite direction (-1: none), the way control packets return
LI_RR = 12  # DWRR: the traffic class whose turn it is at this egress
# virtual channels of a torus under credits (kernel docstring): VC 0 is the class-0 FIFO and LI_CREDITS
LI_DIM = 13  # torus dimension of a router-to-router link (-1: not a torus link, one VC)
LI_DATELINE = 14  # 1: the dimension's dateline (its wraparound link): a packet crossing it takes VC 1
LI_CREDITS_VC1 = 15  # free VC-1 buffer slots (packets) at the downstream end (0 off a torus)
LI_VQHEAD = 16  # first queued packet of VC 1 (-1 if empty)
LI_VQTAIL = 17
LI_VRR = 18  # the VC whose turn it is when both may send
# per traffic class c, columns X + c * LI_CSTRIDE: class 0's sit next to the other hot columns (one
# class touches the same cache lines as before classes), the other classes' after them
LI_QHEAD = 19  # first queued packet of the class (-1 if empty)
LI_QTAIL = 20
LI_PAUSED = 21  # 1 while the upstream end is paused by PFC for the class
LI_XOFF = 22  # 1 while the downstream end holds this ingress in XOFF for the class
LI_CSTRIDE = 4
LI_COLS = LI_QHEAD + MAX_CLASSES * LI_CSTRIDE  # at most; a run's table has its classes' columns only (model.py)

# --- link float table LF[links, :] ---
LF_CAP = 0  # bytes/s
LF_LAT = 1  # s
LF_QBYTES = 2  # bytes waiting in the egress queues, all classes (not counting the one on the wire)
LF_PAUSE_TOTAL = 3  # s the upstream end spent paused, summed over the classes
LF_TXBYTES = 4  # bytes serialised (cumulative; HPCC's txBytes)
LF_STALL_START = 5  # credit mode: time the queue found no credit (-1 if not stalled)
LF_STALL_TOTAL = 6
LF_HEADROOM = 7  # PFC headroom reserved for this ingress, per lossless class (bytes)
LF_QMAX = 8  # largest egress queue seen (bytes, all classes)
LF_BER = 9  # post-FEC bit-error rate of the link (params.link_ber)
# per traffic class c, columns X + c * LF_CSTRIDE (as LI's)
LF_ING = 10  # bytes of the class in the downstream switch that entered through this link
LF_HDRM = 11  # of which held in PFC headroom
LF_PAUSE_START = 12
LF_CQBYTES = 13  # bytes of the class waiting in the egress queue
LF_DEFICIT = 14  # DWRR deficit counter of the class (bytes)
LF_CSTRIDE = 5
LF_COLS = LF_ING + MAX_CLASSES * LF_CSTRIDE  # at most, as LI_COLS

# --- flow integer table FI[flows, :] ---
FI_SRC = 0  # sender NIC port (index into the uplink list)
FI_DST = 1  # receiver host
FI_ACTIVE = 2  # 1 while in its host's active list
FI_DONE = 3  # 1 once every byte is delivered
FI_TCOUNT = 4  # DCQCN timer stage count
FI_BCOUNT = 5  # DCQCN byte-counter stage count
FI_STAGE = 6  # HPCC incStage
FI_HOPS = 7  # switch hops with INT records in the last ACK (0: none yet)
FI_INC = 8  # DCQCN: bit 0 the timer, bit 1 the byte counter raised the rate since the last cut
FI_CUTS = 9  # DCQCN: rate cuts so far
FI_EPOCH = 10  # go-back-N: sender rewinds so far (a packet remembers the epoch it was sent in)
FI_GAP_EPOCH = 11  # go-back-N: the send epoch of the lost packet at FF_GAP
FI_NACKED = 12  # go-back-N: 1 once the receiver has NACKed the current gap
FI_SLOT0 = 13  # first entry of the flow's slots in the receive map (one per MTU of the flow)
FI_SLOTS = 14  # the flow's slots in the receive map (0 for a flow of infinite size: no duplicate check)
FI_RQ_HEAD = 15  # selective repeat / trimming: first packet waiting for retransmission (-1: none)
FI_RQ_TAIL = 16
FI_NACK_EPOCH = 17  # go-back-N: the send epoch of the packet whose arrival made the receiver NACK
FI_CUM = 18  # receiver: slots received in order from the flow's start (its cumulative ACK, in MTUs)
FI_ENT_NEXT = 19  # spraying over entropies: packets sent so far (the next packet's entropy = this mod N)
FI_ACK_CNT = 20  # receiver: packets delivered since its last plain ACK (ack_every coalescing)
FI_CLASS = 21  # the flow's traffic class (0: the highest priority)
FI_LOST_HEAD = 22  # selective repeat: first lost packet the receiver has not NACKed yet (-1: none)
FI_LOST_TAIL = 23
FI_COLS = 24

# --- flow float table FF[flows, :] ---
FF_SIZE = 0
FF_START = 1
FF_SENT = 2  # new bytes handed to the NIC
FF_RETX = 3  # bytes waiting for retransmission
FF_DELIVERED = 4
FF_FINISH = 5
FF_RC = 6  # current rate (DCQCN Rc, HPCC W/T), bytes/s
FF_RT = 7  # DCQCN target rate
FF_ALPHA = 8
FF_ALPHA_T = 9  # start of the current alpha period
FF_LAST_DEC = 10  # last rate decrease
FF_TIMER_T = 11  # last rate-increase timer expiry
FF_BYTE_CTR = 12  # bytes since the last byte-counter event
FF_NEXT_TX = 13  # pacing: earliest next send
FF_LAST_CNP = 14  # receiver side: last CNP sent
FF_RET_LAT = 15  # feedback delay receiver -> sender (s)
FF_WIN = 16  # HPCC window W (bytes)
FF_WINC = 17  # HPCC Wc
FF_UTIL = 18  # HPCC U
FF_INFLIGHT = 19  # bytes sent, not yet acknowledged (HPCC)
FF_LAST_UPD = 20  # HPCC lastUpdateSeq
FF_BASE_RTT = 21  # s
FF_FIRST_TX = 22  # first packet's send time
FF_LAST_TX = 23  # last packet's send time (pacing)
FF_LAST_SIZE = 24  # last packet's size (pacing)
FF_RATE_CAP = 25  # the flow's own rate cap (bytes/s; 0 or inf: none), e.g. a background tenant's offered load
FF_GAP = 26  # go-back-N receiver: offset of the lowest lost packet not yet received again (inf: none)
FF_HIGH = 27  # sender: highest byte offset sent so far (a packet below it is a retransmission)
FF_NACK_OFF = 28  # go-back-N: the offset the last NACK asks to resend from
FF_LAST_MD = 29  # NSCC: time of the last multiplicative decrease
FF_CREDIT = 30  # RCCC: bytes the sender may still send (it sends while this is > 0)
FF_CREDIT_FLY = 31  # RCCC: credit granted by the receiver, not yet at the sender
FF_COLS = 32

# --- packet integer table PI[pool, :] ---
PI_FLOW = 0
PI_SIZE = 1
PI_LINK = 2  # link it is queued on / crossing
PI_INLINK = 3  # link it entered the current switch by (-1 at the NIC)
PI_ECN = 4
PI_HOP = 5  # switch egress hops taken (INT records written)
PI_NEXT = 6  # next packet in the same FIFO / free list
PI_SEQ = 7  # flow bytes sent when this packet left (HPCC's seq)
PI_OFF = 8  # byte offset of the packet's payload in its flow
PI_EPOCH = 9  # the flow's send epoch (FI_EPOCH) when it left
PI_TRIM = 10  # trimmed to its header: the payload bytes cut (0: whole)
PI_ENT = 11  # entropy value (-1: none, round-robin spraying or one path)
PI_CTRL = 12  # 0: a data packet; else a control packet delivering event kind PI_CTRL (or CTRL_ACK)
PI_REF = 13  # control packet: the argument of its event (a packet or a flow)
PI_CLASS = 14  # data packet: its flow's traffic class
PI_SNO = 15  # data packet: its send serial (the run's packets sent before it; a resend gets a new one)
PI_VC = 16  # credits: the virtual channel it holds on PI_LINK (0 off a torus)
PI_INVC = 17  # credits: the virtual channel it held on PI_INLINK (whose credit its departure returns)
PI_COLS = 18

MAX_HOPS = 8  # INT records per packet (switch egress hops); longer paths keep the first ones
INT_FIELDS = 5  # qlen, txBytes, ts, capacity, link id per hop
PF_SENT_T = MAX_HOPS * INT_FIELDS  # the packet's send time (NSCC's RTT sample)
PF_RTO_T = PF_SENT_T + 1  # selective repeat: a lost packet's timeout (-1: off, its NACK resends it)
PF_COLS = MAX_HOPS * INT_FIELDS + 2

# --- the parameter vector P[:] (filled by params.kernel_vector) ---
P_MTU = 0
P_LOSSLESS = 1  # 0 none, 1 pfc, 2 credit
P_CC = 2  # 0 none, 1 dcqcn, 2 hpcc, 3 nscc
P_LINE = 3  # line rate (bytes/s) of the NICs
P_KMIN = 4
P_KMAX = 5
P_PMAX = 6
P_PFC_ALPHA = 7  # dynamic PFC threshold: Xoff = alpha * free shared buffer
P_PFC_RESUME = 8  # Xon = Xoff - this many bytes
P_RTO = 9
P_CNP_INTERVAL = 10
P_RRMP = 11  # rate-reduce monitor period
P_ALPHA_PERIOD = 12
P_G = 13
P_GD_FACTOR = 14  # the CNP cut is Rc * alpha * this (1/2 for RPG_GD = 11)
P_MIN_DEC = 15  # a cut keeps at least this fraction of Rc
P_MIN_RATE = 16
P_TIMER = 17
P_BYTE_RESET = 18
P_F = 19
P_RAI = 20
P_RHAI = 21
P_ALPHA0 = 22
P_ETA = 23
P_MAX_STAGE = 24
P_HPCC_WAI = 25  # HPCC additive increase as a rate (bytes/s); W_AI = this * T
P_RATE_LIMIT = 26  # per-flow NIC rate limit (bytes/s; 0: none)
P_SAMPLE_DT = 27  # time-series sample period (0: off)
P_SEED = 28
P_CLAMP = 29  # DCQCN: Rt <- Rc on every cut
P_CLAMP_ATI = 30  # DCQCN: Rt <- Rc on a cut if the timer raised the rate since the last one
P_PFC_XOFF = 31  # static PFC Xoff per ingress (bytes); 0: the dynamic threshold
P_HIST_BIN = 32  # width of a queue-histogram bin, bytes (covers the switch buffer; params.hist_bin_bytes)
P_LOSS_RECOVERY = 33  # 0 go-back-N, 1 selective repeat
P_TRIM = 34  # 1: a full switch trims a packet to its header instead of dropping it
P_TRIM_BYTES = 35  # size of a trimmed packet (its headers), bytes
P_BER = 36  # post-FEC bit-error rate given by ``ber`` (the kernel reads each link's, LF_BER)
P_ENTROPIES = 37  # spraying: entropy values per flow, hashed at each switch (0: round robin)
P_NSCC_TARGET = 38  # NSCC target queueing delay as a fraction of the base RTT
P_NSCC_MAXWIN = 39  # NSCC window cap as a multiple of the BDP
P_RCCC = 40  # 1: receiver credits (RCCC) gate every sender
P_HEADER = 41  # header + trailer bytes of a data packet (in its frame: on the wire and in buffers)
P_GAP = 42  # line time per packet outside the frame, in bytes (Ethernet preamble + SFD + inter-frame gap)
P_CONTROL = 43  # 1: ACK / NACK / CNP are packets through the queues; 0: a fixed delay (path latency)
P_ACK_BYTES = 44  # frame bytes of an ACK or NACK
P_CNP_BYTES = 45  # frame bytes of a CNP
P_ACK_EVERY = 46  # a plain ACK (no CC feedback) per this many delivered packets of a flow
P_QUEUE_LIMIT = 47  # lossy mode: bytes one switch egress queue may hold (drop-tail / trim above; 0: no limit)
P_CLASSES = 48  # traffic classes of data (1: one FIFO per egress, as before)
P_CLASS_SCHED = 49  # between classes at an egress: 0 strict priority (class 0 first), 1 DWRR
P_CLASS_QUANTUM = 50  # + c: DWRR quantum of class c, bytes (its weight x a full frame / the smallest weight)
P_CLASS_LOSSY = P_CLASS_QUANTUM + MAX_CLASSES  # + c: 1 if class c is lossy under PFC (dropped, never paused)
P_CLASS_QCAP = P_CLASS_LOSSY + MAX_CLASSES  # + c: drop-tail cap of class c's egress queue when lossy (0: none)
P_COLS = P_CLASS_QCAP + MAX_CLASSES

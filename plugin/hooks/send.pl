# memtree hook sender in perl, run by ./capture and ./replace from the directory holding `.ingest.sock`:
#
#   perl send.pl --here DIR            capture: stream stdin to the daemon, wait for the ack (at most 5 s)
#   perl send.pl --reply MS --here DIR replacement: send the payload after the MEMTREE-REPLACE header, read
#                                      the reply within MS milliseconds, print what follows the ack line
#   perl send.pl --missed              note the payload's ids in the missed-captures log, send nothing
#                                      (./capture, when nc could not connect)
#
# Why perl: it is on every Debian/Ubuntu (perl-base is Essential) and every macOS, and it starts in ~4 ms
# against ~15 ms for `python3 -I -S` — but only without modules: `use Socket` alone costs ~11 ms, so this
# uses perl's built-in socket functions with the few constants spelled out (AF_UNIX = 1, SOCK_STREAM = 1,
# SHUT_WR = 1 everywhere memtree runs; MSG_DONTWAIT and the sockaddr_un layout differ on BSD/macOS).
# No strict/warnings either (each is a module load).  Exits 0 on every path and prints nothing except a
# complete replacement; an undelivered capture is one line in the drop log (never its content).  Stdin has a
# deadline and a size cap of its own: a payload that never ends is dropped (stdin-timeout, oversized).

$SIG{PIPE} = 'IGNORE';  # a daemon that hangs up must give us EPIPE, not kill us silently
my $bsd = $^O =~ /darwin|bsd|dragonfly/i;
my $DONTWAIT = $bsd ? 0x80 : 0x40;
my $LOG_CAP = 65536;
my $MISSED = '.missed-captures';  # in the project's roots/ directory; the daemon backfills these (backfill.py)
my $MISSED_CAP = 262144;
my $KEEP = 65536;  # bytes kept from each end of the payload, where its transcript_path and tool_use_id are
my ($head, $tail) = ('', '');
# The whole payload is read within 3-4 s (time() counts whole seconds; hooks.json gives the hook 10 s, the ack
# 5 of them) and is at most what the daemon accepts (MAX_PAYLOAD_BYTES in memtree_core/daemon/ingest.py).
my $STDIN_END = time() + 4;
my $STDIN_CAP = 32 * 1024 * 1024;
my ($stdin_taken, $stdin_gave_up) = (0, '');

# The next chunk of the payload into $_[0]: its length, 0 at its end; undef past the deadline or the cap
# ($stdin_gave_up says which), and on every call after: what is left of an endless stdin is never read.
sub read_stdin {
    return undef if $stdin_gave_up ne '';
    my $left = $STDIN_END - time();
    my $bits = '';
    vec($bits, fileno(STDIN), 1) = 1;
    my $ready = $left > 0 ? select(my $r = $bits, undef, undef, $left) : 0;
    if ($ready <= 0) { $stdin_gave_up = 'stdin-timeout'; return undef; }
    my $n = sysread(STDIN, $_[0], 262144);
    return $n unless $n;
    $stdin_taken += $n;
    if ($stdin_taken > $STDIN_CAP) { $stdin_gave_up = 'oversized'; return undef; }
    return $n;
}

sub remember {
    my ($chunk) = @_;
    $head .= substr($chunk, 0, $KEEP - length $head) if length $head < $KEEP;
    $tail .= $chunk;
    $tail = substr($tail, -$KEEP) if length $tail > $KEEP;
}

# Append "tool_use_id<TAB>transcript_path" (never any content) so the daemon can take the capture from the
# session transcript later.  Reads the rest of stdin: the id comes last in Claude Code's payloads.  Inside a
# JSON string every quote is escaped, so '"key":' can only be a real key; values with escapes are refused.
sub note_missed {
    my $buf;
    while (1) {
        my $n = read_stdin($buf);
        return unless defined $n || $stdin_gave_up eq '';  # the payload's end, where its id is, never came
        last unless $n;
        remember($buf);
    }
    my ($path) = $head =~ /"transcript_path"\s*:\s*"(\/[^"\\\t\n]{0,4090}\.jsonl)"/;
    my @ids = $tail =~ /"tool_use_id"\s*:\s*"([A-Za-z0-9_-]{1,128})"/g;
    return unless defined $path && @ids;
    my @st = stat $MISSED;
    return if @st && $st[7] > $MISSED_CAP;  # bounded: the drop is still counted in hook-drops.log
    my $old = umask 077;
    if (open(my $fh, '>>', $MISSED)) {
        print $fh "$ids[-1]\t$path\n";
        close $fh;
    }
    umask $old;
}

my ($project, $reply_ms) = ('', undef);
my $missed_only = 0;
while (@ARGV) {
    my $a = shift @ARGV;
    if ($a eq '--here') { $project = shift @ARGV; }
    elsif ($a eq '--reply') { $reply_ms = shift @ARGV; }
    elsif ($a eq '--missed') { $missed_only = 1; }
}

sub home {
    my $h = $ENV{MEMTREE_HOME};
    $h = '' unless defined $h;
    $h = ($ENV{HOME} || '') . substr($h, 1) if substr($h, 0, 2) eq '~/';
    return $h ne '' ? $h : ($ENV{HOME} || '') . '/.memtree';
}

sub drop {
    my ($reason) = @_;
    return if defined $reply_ms;  # the capture hook logs drops; the replacement hook stays silent
    note_missed();
    my $h = home();
    mkdir $h, 0700;
    my $log = "$h/hook-drops.log";
    my @st = stat $log;
    rename $log, "$log.1" if @st && $st[7] > $LOG_CAP;
    my $old = umask 077;
    if (open(my $fh, '>>', $log)) {
        (my $p = $project) =~ s/\n/ /g;
        print $fh time() . " $reason $p\n";
        close $fh;
    }
    umask $old;
}

sub reason_of {
    my $no = $_[0] + 0;
    return 'no-daemon' if $no == 2 || $no == 111 || $no == 61;  # ENOENT, ECONNREFUSED (Linux, macOS)
    return 'busy' if $no == 11 || $no == 35;                    # EAGAIN: the listen backlog is full
    return 'send-failed' if $no == 32 || $no == 104 || $no == 54;  # EPIPE, ECONNRESET
    return 'timeout' if $no == 110 || $no == 60;
    return "error-$no";
}

sub address {
    my $path = '.ingest.sock';
    return pack('CC', length($path) + 3, 1) . $path . "\0" if $bsd;  # sun_len, sun_family
    return pack('S', 1) . $path . "\0";                               # sun_family (native u16)
}

# Who we are about to talk to, checked before a byte is sent (memtree_core/forwarder/paths.py does the same at
# bind): the socket's directory is a real directory (lstat), ours, mode 0700; the socket is a socket and
# ours.  Returns a drop reason, or '' when it is safe.  A missing directory or socket: no daemon.
sub unsafe {
    my $target = readlink('.ingest.sock');
    # No link: the daemon exited and left its .registered mark; anything else is not ours.
    return 'no-daemon' if !defined $target && !-e '.ingest.sock' && !-l '.ingest.sock';
    return 'unsafe-socket' unless defined $target && substr($target, 0, 1) eq '/';
    (my $dir = $target) =~ s{/[^/]*\z}{};
    $dir = '/' if $dir eq '';
    my @d = lstat $dir;
    return ($! == 2 ? 'no-daemon' : 'unsafe-dir') unless @d;
    return 'unsafe-dir' if ($d[2] & 0170000) != 0040000 || $d[4] != $> || ($d[2] & 077);
    my @s = lstat $target;
    return ($! == 2 ? 'no-daemon' : 'unsafe-socket') unless @s;
    return 'unsafe-socket' if ($s[2] & 0170000) != 0140000 || $s[4] != $>;
    return '';
}

# The uid of the process listening on $s, where the OS says (Linux SO_PEERCRED: SOL_SOCKET 1, 17 -> pid,
# uid, gid; macOS/BSD LOCAL_PEERCRED: SOL_LOCAL 0, 1 -> version, uid, ...); undef where it does not.
sub peer_uid {
    my ($s) = @_;
    my $v = $bsd ? getsockopt($s, 0, 1) : getsockopt($s, 1, 17);
    return undef unless defined $v;
    return (unpack('LL', $v))[1] if $bsd && length($v) >= 8;
    return (unpack('lLL', $v))[1] if !$bsd && length($v) == 12;
    return undef;
}

sub connected {
    my $why = unsafe();
    if ($why ne '') { drop($why); return undef; }
    socket(my $s, 1, 1, 0) or do { drop(reason_of($!)); return undef; };
    connect($s, address()) or do { drop(reason_of($!)); close $s; return undef; };
    my $uid = peer_uid($s);
    if (defined $uid && $uid != $>) { drop('peer-uid'); close $s; return undef; }
    binmode $s;
    return $s;
}

binmode STDIN;
binmode STDOUT;

if ($missed_only) {
    note_missed();
    exit 0;
}

if (!defined $reply_ms) {
    # -- capture: stream stdin through, then wait for the ack (the daemon acks once it committed) ---------
    my $s = connected() or exit 0;
    local $SIG{ALRM} = sub { drop('timeout'); exit 0; };
    alarm 30;  # a daemon that stops reading mid-payload cannot hold us forever
    my $buf;
    while (1) {
        my $n = read_stdin($buf);
        if (!defined $n && $stdin_gave_up ne '') { drop($stdin_gave_up); exit 0; }
        last unless $n;
        remember($buf);
        my $off = 0;
        while ($off < $n) {
            my $w = syswrite($s, $buf, $n - $off, $off);
            if (!defined $w) { drop(reason_of($!)); exit 0; }
            $off += $w;
        }
    }
    shutdown($s, 1);
    alarm 5;
    my $ack = '';
    while (index($ack, "\n") < 0) {
        my $n = sysread($s, $buf, 4096);
        if (!defined $n) { drop(reason_of($!)); exit 0; }
        last unless $n;
        $ack .= $buf;
    }
    drop('no-ack') if $ack eq '';
    drop('store-damaged') if index($ack, '"store-damaged"') >= 0;  # refused: the daemon cannot count it
    # Refused and counted by the daemon.  Refused for its own state (busy, an error such as a damaged store),
    # not for the capture's content: worth taking from the transcript later.
    note_missed() if $ack =~ /^\{"ok": ?false/ && $ack =~ /"reason": ?"(?:busy|timeout|error)/;
    exit 0;
}

# -- replacement: everything within $reply_ms, or print nothing -----------------------------------------------
# A hard cap measured without Time::HiRes (not in perl-base, and ~8 ms to load): every wait is a 4-argument
# select whose left-over time Linux reports; where it is not reported a wait is charged in full (slices of
# 10 ms), so the cap can only be reached early, never overrun.  alarm() backs it all up at 2 s.
my $left = $reply_ms / 1000;
alarm 2;
my $payload = '';
{
    my $buf;
    while (sysread(STDIN, $buf, 262144)) { $payload .= $buf; }
}
$payload = "MEMTREE-REPLACE 1\n" . $payload;
my $s = connected() or exit 0;

sub wait_for {  # ($fd_is_write) -> 1 when ready, 0 when the time is up
    my ($write) = @_;
    while ($left > 0) {
        my $slice = $left < 0.01 ? $left : 0.01;
        my $bits = '';
        vec($bits, fileno($s), 1) = 1;
        my ($n, $rest) = $write ? select(undef, my $w = $bits, undef, $slice)
                                : select(my $r = $bits, undef, undef, $slice);
        $rest = $slice if !defined $rest || $rest < 0 || $rest > $slice;
        $left -= $n > 0 && $rest < $slice ? $slice - $rest : ($n > 0 ? 0.001 : $slice);
        return 1 if $n > 0;
    }
    return 0;
}

my $off = 0;
my $len = length $payload;
while ($off < $len) {
    my $w = send($s, substr($payload, $off, 262144), $DONTWAIT);
    if (defined $w) { $off += $w; next; }
    exit 0 unless $! == 11 || $! == 35;  # EAGAIN: wait for room; anything else: give up silently
    wait_for(1) or exit 0;
}
shutdown($s, 1);
my $reply = '';
while (1) {
    wait_for(0) or exit 0;
    my $buf = '';
    my $got = recv($s, $buf, 262144, $DONTWAIT);
    if (!defined $got) { next if $! == 11 || $! == 35; exit 0; }
    last if $buf eq '';  # EOF: the reply is complete
    $reply .= $buf;
}
my $nl = index($reply, "\n");
exit 0 if $nl < 0 || substr($reply, 0, $nl) !~ /^\{"ok": ?true/;
my $out = substr($reply, $nl + 1);
if ($out =~ /^\{.*\}\n?\z/s) {
    my $o = 0;
    while ($o < length $out) {
        my $w = syswrite(STDOUT, $out, length($out) - $o, $o);
        last unless defined $w;
        $o += $w;
    }
}
exit 0;

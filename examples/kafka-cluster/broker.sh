#!/bin/sh
# One Kafka broker on this host: broker.sh start|stop|ready DIR [LIBS]
# DIR holds server.properties, cluster.id and the log directory; LIBS holds Kafka's jars.
# hone runs these as the `brokers` group's workload (hone.yaml.in): start returns once the
# broker is launched, stop once it is gone (and succeeds when it was not running), ready exits 0
# once the broker says it has started.
set -u
action=$1
dir=$2
libs=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
cd "$dir" || exit 1

alive() {  # a killed broker may linger as a zombie until its new parent reaps it
    [ -f broker.pid ] || return 1
    state=$(awk '{print $3}' "/proc/$(cat broker.pid)/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

case $action in
start)
    if [ ! -f kafka-logs/meta.properties ]; then
        java -Xmx128m -cp "$libs/*" kafka.tools.StorageTool format -t "$(cat cluster.id)" \
            -c server.properties --ignore-formatted >format.log 2>&1 || { cat format.log >&2; exit 1; }
    fi
    # class data sharing: the first run writes the classes it loaded to broker.jsa.new as it
    # exits, and a stop that saw it exit on its own renames it broker.jsa (one cut short by
    # SIGKILL leaves none); later starts map the file and take half the time (a JVM that
    # cannot use it says so in broker.log and starts as without it)
    if [ -s broker.jsa ]; then cds=-XX:SharedArchiveFile=broker.jsa; else cds=-XX:ArchiveClassesAtExit=broker.jsa.new; fi
    # jvm.options in DIR, when there: more JVM options for this host's broker, separated by
    # white space (-Xms and -Xmx given there win over the heap size here)
    set -f
    opts=$(cat jvm.options 2>/dev/null)
    : >broker.log
    # shellcheck disable=SC2086
    nohup java -Xms384m -Xmx384m $opts "$cds" -Dlog4j.configuration="file:$here/log4j.properties" \
        -cp "$libs/*" kafka.Kafka server.properties >>broker.log 2>&1 </dev/null &
    echo $! >broker.pid
    ;;
stop)
    alive || { rm -f broker.pid; exit 0; }
    pid=$(cat broker.pid)
    kill "$pid"
    # a clean shutdown, else SIGKILL after 20 s; 120 s while it writes its class archive
    limit=200
    [ -s broker.jsa ] || limit=1200
    n=0
    while alive; do
        n=$((n + 1))
        [ $n -eq $limit ] && kill -9 "$pid"
        sleep 0.1
    done
    if [ $n -lt $limit ] && [ -s broker.jsa.new ]; then mv -f broker.jsa.new broker.jsa; fi
    rm -f broker.jsa.new
    rm -f broker.pid
    ;;
ready)
    alive && grep -q 'Kafka Server started' broker.log
    ;;
*)
    echo "usage: broker.sh start|stop|ready DIR [LIBS]" >&2
    exit 2
    ;;
esac

# Sourced: points JAVA_HOME at a JDK 25 (hearth's language level), or fails saying how to get one.
java_major() { "$1/bin/java" -XX:+IgnoreUnrecognizedVMOptions -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if [ -z "${JAVA_HOME:-}" ] || [ "$(java_major "$JAVA_HOME")" != "25" ]; then
  JAVA_HOME=""
  for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25* /usr/lib/jvm/*25*; do
    if [ -x "$candidate/bin/java" ] && [ "$(java_major "$candidate")" = "25" ]; then JAVA_HOME=$candidate; break; fi
  done
  if [ -z "$JAVA_HOME" ]; then
    echo "hearth needs JDK 25: none found in JAVA_HOME or /usr/lib/jvm." >&2
    echo "  Debian/Ubuntu: add the Adoptium apt repository (https://adoptium.net/installation/linux/)," >&2
    echo "  then: sudo apt-get install temurin-25-jdk" >&2
    echo "  Any other JDK 25: unpack it and export JAVA_HOME=/path/to/jdk-25 (README, Requirements)." >&2
    exit 1
  fi
fi
export JAVA_HOME

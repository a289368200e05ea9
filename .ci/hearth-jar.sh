# Sourced after .ci/java25.sh: hearth_jar ROOT prints the path of the driver jar, building it
# first when it is missing or older than any main source or pom, so that nothing runs stale code.
# The build's output goes to stderr.
hearth_jar() {
  local root=$1 jar=$1/driver/target/hearth.jar
  if [ ! -f "$jar" ] || [ -n "$(find "$root"/*/src/main "$root"/pom.xml "$root"/*/pom.xml -newer "$jar" -print -quit)" ]; then
    echo "building $jar (missing, or older than the sources): ./mvnw -q -B -DskipTests package" >&2
    (cd "$root" && ./mvnw -q -B -DskipTests package) >&2
  fi
  echo "$jar"
}

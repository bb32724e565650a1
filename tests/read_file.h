#pragma once
// The whole text of a file the test wrote or the code under test wrote ("" if it cannot be read).

#include <fstream>
#include <sstream>
#include <string>

namespace topoep::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace topoep::testing

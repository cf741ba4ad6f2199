# Writes OUT: a header holding the file IN as the string kPageHtml (a raw string literal).
file(READ ${IN} content)
string(FIND "${content}" ")acan_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} holds the raw string's delimiter")
endif()
file(WRITE ${OUT} "// Generated from src/obs/page.html by embed_page.cmake: do not edit.\n#pragma once\n#include <string_view>\nnamespace acan::obs {\ninline constexpr std::string_view kPageHtml = R\"acan_page(${content})acan_page\";\n}\n")

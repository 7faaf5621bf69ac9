package login

import "testing"

var pypircCases = []fakerCase{
	{name: "pypi token, testpypi, a private index, comments, CRLF",
		in: "# uploads\r\n[distutils]\r\nindex-servers =\r\n    pypi\r\n    testpypi\r\n    corp\r\n\r\n[pypi]\r\nusername = __token__\r\npassword = pypi-AgEIcHlwaS5vcmcCJDAwMDAw\r\n\r\n[testpypi]\r\n  username: __token__\r\n  password: pypi-testTOKEN1234\r\n[corp]\r\nrepository = https://PyPI.Corp.Example:443/simple/\r\nusername = bob\r\nPassword = hunter2hunter2 # not a comment\r\n",
		creds: []wantCred{
			{"pypirc:pypi", "pypi-AgEIcHlwaS5vcmcCJDAwMDAw", []string{"upload.pypi.org"}},
			{"pypirc:testpypi", "pypi-testTOKEN1234", []string{"test.pypi.org"}},
			{"pypirc:corp", "hunter2hunter2 # not a comment", []string{"pypi.corp.example"}},
		}},
	{name: "repository after password", in: "[x]\npassword=secretPW99\nrepository=http://r.example:8080/\n",
		creds: []wantCred{{"pypirc:x", "secretPW99", []string{"r.example:8080"}}}},
	{name: "no passwords", in: "[distutils]\nindex-servers = pypi\n[pypi]\nusername = a\n"},
	{name: "empty", in: ""},
	{name: "password in DEFAULT", in: "[DEFAULT]\npassword = secretPW99\n", wantErr: true},
	{name: "password in distutils", in: "[distutils]\npassword = secretPW99\n", wantErr: true},
	{name: "no repository", in: "[corp]\npassword = secretPW99\n", wantErr: true},
	{name: "continued password", in: "[pypi]\npassword = secretPW99\n\n  more99\n", wantErr: true},
	{name: "option before section", in: "password = secretPW99\n", wantErr: true},
	{name: "section twice", in: "[pypi]\n[pypi]\n", wantErr: true},
	{name: "option twice", in: "[pypi]\npassword = secretPW99\nPASSWORD = other999\n", wantErr: true},
	{name: "not an option", in: "[pypi]\njust words\n", wantErr: true},
	{name: "bad header", in: "[pypi\n", wantErr: true},
	{name: "lone CR hides a line", in: "[pypi]\nusername = a\rpassword = secretPW99\n", wantErr: true},
	{name: "userinfo in repository", in: "[x]\nrepository = https://u:secretPW99@r.example/\npassword = secretPW99\n", wantErr: true},
	{name: "userinfo in repository, no password", in: "[x]\nrepository = https://u:secretPW99@r.example/\n", wantErr: true},
}

func init() { fuzzSeeds["pypirc"] = seedsOf(pypircCases) }

func TestPypirc(t *testing.T) { runFakerCases(t, "pypirc", pypircCases) }
